//! Tests written in other languages: each SDK's examples are built from
//! source (toolchains installed from npm and PyPI into `target/lang/`, once
//! per test process; Go is the machine's own `go`, with its module and
//! build caches in `target/lang/`), run with the real binary against the
//! loopback target server, and must count exactly what the Rust examples
//! count.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::support::*;

pub(crate) fn lang_dir() -> PathBuf {
    let dir = repo_root().join("target").join("lang");
    std::fs::create_dir_all(&dir).expect("create target/lang");
    dir
}

/// Run `cmd` to completion; panic with its output when it fails.
pub(crate) fn must(mut cmd: Command, what: &str) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e} (is it installed?)"));
    assert!(
        out.status.success(),
        "{what} failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Copy an SDK (without `node_modules`) into `target/lang/<name>` and run
/// `npm ci` there against its committed lock file; skipped when the same
/// lock was already installed.
fn npm_sdk(sdk: &str) -> PathBuf {
    let src = repo_root().join("sdk").join(sdk);
    let dst = lang_dir().join(format!("{sdk}-sdk"));
    let lock = std::fs::read(src.join("package-lock.json")).expect("committed package-lock.json");
    let installed = std::fs::read(dst.join("node_modules/.wload-lock")).ok();
    copy_tree(&src, &dst);
    if installed.as_deref() != Some(lock.as_slice()) {
        let mut npm = Command::new("npm");
        npm.args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dst);
        must(npm, &format!("npm ci in {}", dst.display()));
        std::fs::write(dst.join("node_modules/.wload-lock"), &lock).expect("mark install");
    }
    dst
}

/// Copy files and folders (following symlinks), skipping `node_modules`.
fn copy_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).expect("create copy");
    for entry in std::fs::read_dir(src).expect("read sdk") {
        let entry = entry.expect("dir entry");
        let name = entry.file_name();
        if name == "node_modules" || name == "__pycache__" {
            continue;
        }
        let from = entry.path();
        let to = dst.join(&name);
        if std::fs::metadata(&from).expect("stat").is_dir() {
            copy_tree(&from, &to);
        } else {
            std::fs::copy(&from, &to).expect("copy sdk file");
        }
    }
}

pub(crate) struct Built {
    hello: PathBuf,
    browse: PathBuf,
    /// Groups; not written for AssemblyScript (its functions cannot
    /// capture, so nested groups read nothing like the other languages).
    shop: Option<PathBuf>,
    /// The HTTP features, one per mode: examples/<lang>/http_features.
    http_features: Option<PathBuf>,
}

impl Built {
    /// The http_features example of `lang`, which docs/parity.md compares.
    pub(crate) fn http_features_path(&self, lang: &str) -> &Path {
        self.http_features
            .as_deref()
            .unwrap_or_else(|| panic!("no {lang} http_features"))
    }
}

pub(crate) fn javascript() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let build = |example: &str| {
            let out = lang_dir().join(format!("js-{example}.wasm"));
            let mut build = wload();
            build
                .arg("build")
                .arg(repo_root().join(format!("examples/js/{example}/script.js")))
                .arg("-o")
                .arg(&out);
            must(build, &format!("wload build examples/js/{example}"));
            out
        };
        Built {
            hello: build("hello"),
            browse: build("browse"),
            shop: Some(build("shop")),
            http_features: Some(build("http_features")),
        }
    })
}

/// The AssemblyScript SDK, installed once per test process.
fn assemblyscript_sdk() -> &'static Path {
    static SDK: OnceLock<PathBuf> = OnceLock::new();
    SDK.get_or_init(|| npm_sdk("assemblyscript"))
}

pub(crate) fn assemblyscript() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| {
        let sdk = assemblyscript_sdk();
        let build = |example: &str| {
            let out = lang_dir().join(format!("as-{example}.wasm"));
            let mut node = Command::new("node");
            node.arg(sdk.join("bin/wload-as.mjs"))
                .arg("build")
                .arg(repo_root().join(format!(
                    "examples/assemblyscript/{example}/assembly/index.ts"
                )))
                .arg("-o")
                .arg(&out);
            must(
                node,
                &format!("wload-as build examples/assemblyscript/{example}"),
            );
            out
        };
        Built {
            hello: build("hello"),
            browse: build("browse"),
            shop: None,
            http_features: Some(build("http_features")),
        }
    })
}

/// The Python of a venv in `target/lang/` with componentize-py installed,
/// once per test process (the Python examples and Python plugins build
/// with it).
pub(crate) fn python_with_componentize() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let venv = lang_dir().join("py-venv");
        let py = venv.join("bin/python");
        if !py.exists() {
            let mut mk = Command::new("python3");
            mk.args(["-m", "venv"]).arg(&venv);
            must(mk, "python3 -m venv");
        }
        let mut pip = Command::new(&py);
        pip.args(["-m", "pip", "install", "--quiet", "componentize-py==0.25.1"]);
        must(pip, "pip install componentize-py==0.25.1");
        py
    })
}

/// `examples/python/<example>` built by `wload-py build` (a test of
/// `wload:test@0.2.0`) into `target/lang/py-<example>.wasm`.
fn python_build(example: &str) -> PathBuf {
    let out = lang_dir().join(format!("py-{example}.wasm"));
    let mut cmd = Command::new(python_with_componentize());
    cmd.arg(repo_root().join("sdk/python/wload_build.py"))
        .arg("build")
        .arg(repo_root().join(format!("examples/python/{example}/{example}.py")))
        .arg("-o")
        .arg(&out);
    must(cmd, &format!("wload-py build examples/python/{example}"));
    out
}

pub(crate) fn python() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| Built {
        hello: python_build("hello"),
        browse: python_build("browse"),
        shop: Some(python_build("shop")),
        http_features: Some(python_build("http_features")),
    })
}

/// `examples/python/<example>` as it is: `wload run test.py` builds it
/// with the MicroPython runtime built into the binary (no Python, no
/// componentize-py), the same files the CPython build above takes.
fn micropython_source(example: &str) -> PathBuf {
    repo_root().join(format!("examples/python/{example}/{example}.py"))
}

pub(crate) fn micropython() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| Built {
        hello: micropython_source("hello"),
        browse: micropython_source("browse"),
        shop: Some(micropython_source("shop")),
        http_features: Some(micropython_source("http_features")),
    })
}

/// `examples/go/<example>`, built by the SDK's own `wload-go build`
/// (`go build` for wasip1, then the world's metadata appended) with the
/// machine's Go (1.24 or later). The build fetches nothing: the SDK has no
/// dependencies. Everything Go writes stays under `target/lang/go/`: its
/// build and module caches, GOPATH, and its telemetry counters (under
/// the user's config directory, which is moved there); no `go env -w`
/// file of the machine's is read.
fn go_build(example: &str) -> PathBuf {
    let dir = lang_dir();
    let out = dir.join(format!("go-{example}.wasm"));
    let home = dir.join("go");
    let go_bin = go_binary();
    let mut go = Command::new(&go_bin);
    go.args(["run", "wload/sdk/cmd/wload-go", "build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(repo_root().join(format!("examples/go/{example}")))
        .env("GOCACHE", home.join("cache"))
        .env("GOMODCACHE", home.join("mod"))
        .env("GOPATH", home.join("path"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("GOENV", "off")
        // No git runs for stamps a test module does not use.
        .env("GOFLAGS", "-buildvcs=false")
        // The machine's Go, never one fetched for an older go.mod.
        .env("GOTOOLCHAIN", "local")
        // What wload-go runs `go build` with.
        .env("GO", &go_bin);
    must(
        go,
        &format!("wload-go build examples/go/{example} (Go 1.24 or later)"),
    );
    out
}

/// `$GO`, else `go` on `PATH`, else the official installation's place
/// (a shell without the profile that puts it on `PATH` still finds it).
fn go_binary() -> PathBuf {
    if let Some(go) = std::env::var_os("GO") {
        return go.into();
    }
    let on_path = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|out| out.status.success());
    let installed = Path::new("/usr/local/go/bin/go");
    if !on_path && installed.exists() {
        return installed.to_owned();
    }
    "go".into()
}

pub(crate) fn go() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(|| Built {
        hello: go_build("hello"),
        browse: go_build("browse"),
        shop: Some(go_build("shop")),
        http_features: Some(go_build("http_features")),
    })
}

/// A run's bound. A JavaScript or Python test's first run compiles a
/// component of 10-40 MB; with the rest of the suite on the same two
/// cores that took over 180 s once (a full suite beside four builds).
pub(crate) const LIMIT: Duration = Duration::from_secs(480);

/// Run `test` and the Rust example `rust` with the same arguments, each
/// against its own server; both must exit 0.
fn side_by_side(name: &str, test: &Path, rust: &str, args: &str) -> [(u64, Finished); 2] {
    let mut runs = Vec::new();
    for (label, path) in [
        (name.to_owned(), test.to_owned()),
        (format!("{name}_rust"), guest(rust)),
    ] {
        let server = server();
        let run = run_file(&label, &path, &server.base_url(), args, LIMIT);
        assert_eq!(run.code(), Some(0), "{label}: stderr: {}", run.stderr());
        runs.push((server.stats.requests(), run));
    }
    let second = runs.pop().expect("two runs");
    let first = runs.pop().expect("two runs");
    [first, second]
}

fn hello_counts_like_rust(lang: &str, test: &Path) {
    let [(reqs, run), (rust_reqs, rust)] = side_by_side(
        &format!("{lang}_hello"),
        test,
        "hello",
        "--vus 4 --iterations 400",
    );
    assert_eq!(reqs, 400, "{lang} hello: requests at the server");
    assert_eq!(reqs, rust_reqs);
    for (metric, field) in [
        ("http_reqs", "count"),
        ("iterations", "count"),
        ("body_bytes", "count"),
    ] {
        assert_eq!(
            run.metric(metric, field),
            rust.metric(metric, field),
            "{lang}: {metric}.{field}"
        );
    }
    assert_eq!(run.check("status is 200"), (400, 0));
    assert_eq!(run.check("status is 200"), rust.check("status is 200"));
}

fn browse_counts_like_rust(lang: &str, test: &Path) {
    // 12 iterations over 4 VUs, one second of sleep each: about 3 s.
    let [(reqs, run), (rust_reqs, rust)] = side_by_side(
        &format!("{lang}_browse"),
        test,
        "browse",
        "--vus 4 --iterations 12",
    );
    // home, item page, two assets, echo.
    assert_eq!(reqs, 12 * 5, "{lang} browse: requests at the server");
    assert_eq!(reqs, rust_reqs);
    assert_eq!(
        run.metric("http_reqs", "count"),
        rust.metric("http_reqs", "count")
    );
    assert_eq!(
        run.metric("iterations", "count"),
        12.0,
        "{lang}: iterations"
    );
    // The custom time trend got real samples (a trend exports no count).
    assert!(run.metric("page_time", "min") > 0.0, "{lang}: page_time");
    for check in [
        "home is 200",
        "item page has 1024 bytes",
        "assets arrive in order",
        "echo returns the item",
    ] {
        assert_eq!(run.check(check), (12, 0), "{lang}: check {check:?}");
        assert_eq!(
            run.check(check),
            rust.check(check),
            "{lang}: check {check:?}"
        );
    }
}

/// Groups nest and tag the same way in every language: the whole
/// `root_group` tree (names, paths, ids, check counts) equals Rust's.
fn shop_groups_like_rust(lang: &str, test: &Path) {
    let [(reqs, run), (rust_reqs, rust)] = side_by_side(
        &format!("{lang}_shop"),
        test,
        "shop",
        "--vus 2 --iterations 20 --summary-trend-stats count,avg",
    );
    assert_eq!(reqs, 20 * 4, "{lang} shop: requests at the server");
    assert_eq!(reqs, rust_reqs);
    assert_eq!(
        run.summary["root_group"], rust.summary["root_group"],
        "{lang}: group tree"
    );
    assert_eq!(run.metric("group_duration", "count"), 20.0 * 4.0);
}

#[test]
fn javascript_examples_count_like_rust() {
    let built = javascript();
    hello_counts_like_rust("js", &built.hello);
    browse_counts_like_rust("js", &built.browse);
    shop_groups_like_rust("js", built.shop.as_deref().expect("js shop"));
}

/// Over TLS the Go test sees what Rust sees: HTTP/2 chosen by ALPN, TLS
/// 1.3, a timed handshake; and HTTP/1.1 when the server offers only it.
#[test]
fn go_proto_and_tls_version_over_tls_as_in_rust() {
    let built = go();
    let test = built.http_features.as_deref().expect("go http_features");
    for (name, alpn, proto) in [
        ("go_tls_h2", &[&b"h2"[..], b"http/1.1"][..], "HTTP/2.0"),
        ("go_tls_h1", &[&b"http/1.1"[..]][..], "HTTP/1.1"),
    ] {
        let (server, ca) = crate::http::tls_server(name, alpn);
        let base = format!("https://localhost:{}", server.addr.port());
        let run = run_file(
            name,
            test,
            &base,
            &format!(
                "--vus 1 --iterations 3 -e MODE=proto -e EXPECT_PROTO={proto} -e EXPECT_TLS=tls1.3 --tls-ca {}",
                ca.display()
            ),
            LIMIT,
        );
        assert_eq!(run.code(), Some(0), "{name}: stderr: {}", run.stderr());
        for check in [
            "status is 200",
            "proto as expected",
            "server saw the proto",
            "tls version as expected",
        ] {
            assert_eq!(run.check(check), (3, 0), "{name}: check {check:?}");
        }
        assert_eq!(run.check("handshake timed"), (1, 0), "{name}");
    }
}

/// A per-request body limit (`maxBodySize` in JS, `max_body_size=` in
/// Python; `request-options.max-body-size` underneath) cuts the
/// requests that set it and only those: the `limit` mode of
/// http_features sends, per iteration, `/bytes/4096` with a 1 KiB limit
/// and without, a gzip body of 137 bytes decoded with a 100-byte limit,
/// and a batch of a limited, an unlimited and a small limited request.
/// The engine's own record of each request (`--out json`) must show 1060
/// for the two cut on the wire, 1702 for the decoded one and success for
/// the rest, and the checks must read as Rust's.
fn body_limit_per_request(lang: &str, test: &Path) {
    const ITERATIONS: u64 = 2;
    let args = format!("--vus 1 --iterations {ITERATIONS} -e MODE=limit");
    let name = format!("{lang}_http_limit");
    // Not in `run_file`'s scratch folder, which it empties.
    let lines = scratch(&format!("{name}-out")).join("out.jsonl");
    let target = server();
    let run = run_file(
        &name,
        test,
        &target.base_url(),
        &format!("{args} --out json={}", lines.display()),
        LIMIT,
    );
    assert_eq!(run.code(), Some(0), "{name}: stderr: {}", run.stderr());
    assert_eq!(target.stats.requests(), 6 * ITERATIONS, "{name}: requests");

    // `http_reqs` samples by (error_code, status) tag.
    let mut seen = std::collections::BTreeMap::<(String, String), u64>::new();
    let text = std::fs::read_to_string(&lines).expect("read the --out json lines");
    for line in text.lines() {
        let line: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if line["metric"] != "http_reqs" {
            continue;
        }
        let tag = |k: &str| line["tags"][k].as_str().unwrap_or("none").to_owned();
        let n = line["values"]["sum"].as_f64().unwrap_or(0.0) as u64;
        *seen.entry((tag("error_code"), tag("status"))).or_default() += n;
    }
    let cut: u64 = seen
        .iter()
        .filter(|((code, _), _)| code == "1060")
        .map(|(_, n)| n)
        .sum();
    let decoded: u64 = seen
        .iter()
        .filter(|((code, _), _)| code == "1702")
        .map(|(_, n)| n)
        .sum();
    let whole = seen
        .get(&("none".to_owned(), "200".to_owned()))
        .copied()
        .unwrap_or(0);
    assert_eq!(
        (cut, decoded, whole),
        (2 * ITERATIONS, ITERATIONS, 3 * ITERATIONS),
        "{name}: http_reqs by (error_code, status): {seen:?}"
    );

    for check in [
        "limit: past it fails with 1060",
        "limit: without it the body is whole",
        "limit: decoded past it fails with 1702",
        "limit: batch, each its own",
    ] {
        assert_eq!(run.check(check), (ITERATIONS, 0), "{name}: check {check:?}");
    }
    let rust_server = server();
    let rust = run_file(
        &format!("{name}_rust"),
        &guest("http_features"),
        &rust_server.base_url(),
        &args,
        LIMIT,
    );
    assert_eq!(
        rust.code(),
        Some(0),
        "{name}_rust: stderr: {}",
        rust.stderr()
    );
    assert_eq!(
        run.summary["root_group"], rust.summary["root_group"],
        "{name}: checks as Rust's"
    );
    assert_eq!(
        run.metric("http_req_failed", "passes"),
        rust.metric("http_req_failed", "passes"),
        "{name}: http_req_failed"
    );
}

#[test]
fn javascript_body_limit_per_request() {
    let built = javascript();
    body_limit_per_request(
        "js",
        built.http_features.as_deref().expect("js http_features"),
    );
}

#[test]
fn python_body_limit_per_request() {
    let built = python();
    body_limit_per_request(
        "python",
        built
            .http_features
            .as_deref()
            .expect("python http_features"),
    );
}

#[test]
fn python_examples_count_like_rust() {
    let built = python();
    hello_counts_like_rust("python", &built.hello);
    browse_counts_like_rust("python", &built.browse);
    shop_groups_like_rust("python", built.shop.as_deref().expect("python shop"));
}

/// The Python examples, unchanged, on MicroPython (`wload run test.py`):
/// the same counts as Rust's, as on CPython.
#[test]
fn micropython_examples_count_like_rust() {
    let built = micropython();
    hello_counts_like_rust("micropython", &built.hello);
    browse_counts_like_rust("micropython", &built.browse);
    shop_groups_like_rust(
        "micropython",
        built.shop.as_deref().expect("micropython shop"),
    );
}

#[test]
fn micropython_body_limit_per_request() {
    body_limit_per_request(
        "micropython",
        micropython().http_features_path("micropython"),
    );
}

#[test]
fn micropython_scenarios_exec_like_rust() {
    scenarios_exec_like_rust("micropython", &micropython_source("scenarios"));
}

/// A scenario's `exec` reaches the Python function of that name through
/// 0.2's `iteration(entry)`, the index in `functions()`: the two
/// scenarios of examples/python/scenarios run their own function, with
/// their own env, as examples/rust/scenarios does.
#[test]
fn python_scenarios_exec_their_own_function_like_rust() {
    let test = python_build("scenarios");
    let config = options_file(
        "python_scenarios",
        &serde_json::json!({"scenarios": {
            "browse": {"executor": "shared-iterations", "vus": 2, "iterations": 10},
            "api": {"executor": "per-vu-iterations", "vus": 2, "iterations": 3, "exec": "api",
                    "env": {"ORIGIN": "scenario"}}
        }}),
    );
    let [(reqs, run), (rust_reqs, rust)] = side_by_side(
        "python_scenarios",
        &test,
        "scenarios",
        &format!("{config} -e ORIGIN=cli"),
    );
    assert_eq!((reqs, rust_reqs), (16, 16), "requests at the servers");
    for (check, want) in [
        ("browse ran default", (10, 0)),
        ("api ran api", (6, 0)),
        ("api sees ORIGIN=scenario", (6, 0)),
    ] {
        assert_eq!(run.check(check), want, "python: check {check:?}");
        assert_eq!(rust.check(check), want, "rust: check {check:?}");
    }
}

#[test]
fn assemblyscript_examples_count_like_rust() {
    let built = assemblyscript();
    hello_counts_like_rust("assemblyscript", &built.hello);
    browse_counts_like_rust("assemblyscript", &built.browse);
}

#[test]
fn go_examples_count_like_rust() {
    let built = go();
    hello_counts_like_rust("go", &built.hello);
    browse_counts_like_rust("go", &built.browse);
    shop_groups_like_rust("go", built.shop.as_deref().expect("go shop"));
}

#[test]
fn go_body_limit_per_request() {
    let built = go();
    body_limit_per_request(
        "go",
        built.http_features.as_deref().expect("go http_features"),
    );
}

/// Scenarios choose an AssemblyScript or Go entry point with `exec` as
/// they choose a Rust one: the engine passes its index in `functions()`
/// (`wload:test@0.2.0`), and the checks (each naming the scenario that
/// ran it) and the requests are examples/rust/scenarios'.
fn scenarios_exec_like_rust(lang: &str, test: &Path) {
    let name = format!("{lang}_scenarios");
    let config = scratch(&format!("{name}-config")).join("two-scenarios.json");
    let scenarios = serde_json::json!({"scenarios": {
        "browse": {"executor": "shared-iterations", "vus": 2, "iterations": 10},
        "api": {"executor": "per-vu-iterations", "vus": 2, "iterations": 3, "exec": "api",
                "startTime": "200ms", "env": {"ORIGIN": "scenario"}}
    }});
    std::fs::write(&config, scenarios.to_string()).expect("write the scenarios");
    let args = format!("--config {} -e ORIGIN=cli", config.display());
    let [(reqs, run), (rust_reqs, rust)] = side_by_side(&name, test, "scenarios", &args);
    assert_eq!(reqs, 16, "{name}: requests at the server");
    assert_eq!(reqs, rust_reqs);
    assert_eq!(run.check("browse ran default"), (10, 0), "{name}");
    assert_eq!(run.check("api ran api"), (6, 0), "{name}");
    assert_eq!(run.check("api sees ORIGIN=scenario"), (6, 0), "{name}");
    assert_eq!(
        run.summary["root_group"], rust.summary["root_group"],
        "{name}: checks as Rust's"
    );
}

#[test]
fn assemblyscript_scenarios_exec_like_rust() {
    let sdk = assemblyscript_sdk();
    let out = lang_dir().join("as-scenarios.wasm");
    let mut node = Command::new("node");
    node.arg(sdk.join("bin/wload-as.mjs"))
        .arg("build")
        .arg(repo_root().join("examples/assemblyscript/scenarios/assembly/index.ts"))
        .arg("-o")
        .arg(&out);
    must(node, "wload-as build examples/assemblyscript/scenarios");
    scenarios_exec_like_rust("assemblyscript", &out);
}

#[test]
fn go_scenarios_exec_like_rust() {
    scenarios_exec_like_rust("go", &go_build("scenarios"));
}

/// A Go test's faults end as the Rust test's do: a panic fails its
/// iteration with the panic's message and the VU goes on; a returned error
/// fails the iteration; the memory limit stops a VU that allocates without
/// end; a failing setup stops the run with its message; setup data reaches
/// every iteration and teardown; garbage collections do not trap the
/// instance, also while results too large for the SDK's scratch buffer
/// arrive; a response kept past its iteration panics with the SDK's
/// message when used.
#[test]
fn go_faults_end_as_in_rust() {
    let test = go_build("faults");
    let run = |name: &str, args: &str| {
        let server = server();
        let run = run_file(name, &test, &server.base_url(), args, LIMIT);
        (server.stats.requests(), run)
    };

    let (reqs, panics) = run("go_panic", "--vus 1 --iterations 9 -e FAULT=panic");
    assert_eq!(panics.code(), Some(0), "stderr: {}", panics.stderr());
    assert_eq!(reqs, 9);
    assert_eq!(panics.metric("iterations_failed", "count"), 3.0);
    assert_eq!(panics.check("status is 200"), (6, 0));
    assert_eq!(panics.check("setup data arrived"), (6, 0));
    let stderr = panics.stderr();
    assert!(
        stderr.contains("panic: deliberate panic in iteration 2"),
        "{stderr}"
    );
    assert!(stderr.contains("teardown saw token t0k3n"), "{stderr}");

    let (_, errors) = run("go_error", "--vus 1 --iterations 10 -e FAULT=error");
    assert_eq!(errors.metric("iterations_failed", "count"), 5.0);
    assert_eq!(errors.check("status is 200"), (5, 0));
    assert!(
        errors.stderr().contains("deliberate error in iteration 1"),
        "{}",
        errors.stderr()
    );

    let (_, memory) = run(
        "go_memory",
        "--vus 1 --iterations 2 -e FAULT=memory --vu-memory 16MiB",
    );
    assert_eq!(memory.metric("iterations_failed", "count"), 2.0);
    assert!(
        memory.stderr().contains("--vu-memory limit of 16 MiB"),
        "{}",
        memory.stderr()
    );

    let (reqs, setup) = run("go_setup", "--iterations 5 -e FAULT=setup");
    assert_eq!(setup.code(), Some(107));
    assert!(
        setup
            .stderr()
            .contains("setup failed: setup refused on purpose"),
        "{}",
        setup.stderr()
    );
    assert_eq!(reqs, 0);

    // Collections while the engine hands results over do not trap.
    let (_, garbage) = run("go_garbage", "--vus 1 --iterations 30 -e FAULT=garbage");
    assert_eq!(garbage.code(), Some(0), "stderr: {}", garbage.stderr());
    assert!(
        garbage.summary["metrics"]["iterations_failed"].is_null(),
        "{}",
        garbage.stderr()
    );
    assert_eq!(garbage.check("garbage: headers read"), (30, 0));

    // Results past the SDK's 32 KiB scratch buffer (setup data of
    // 128 KiB, a 40 KB -e variable, 40 KiB of set-cookie fields) arrive
    // whole amid collections, and the memory they pass through is reused:
    // 40 iterations of 64 reads each stay within 64 MiB.
    let big = "b".repeat(40_000);
    let (_, big) = run(
        "go_big",
        &format!(
            "--vus 1 --iterations 40 -e FAULT=big -e BIG_LEN=40000 -e BIG={big} --vu-memory 64MiB"
        ),
    );
    assert_eq!(big.code(), Some(0), "stderr: {}", big.stderr());
    assert!(
        big.summary["metrics"]["iterations_failed"].is_null(),
        "{}",
        big.stderr()
    );
    assert_eq!(big.check("big: results whole"), (40, 0));
    assert_eq!(big.check("setup data arrived"), (40, 0));

    let (_, stale) = run("go_stale", "--vus 1 --iterations 2 -e FAULT=stale");
    assert_eq!(stale.metric("iterations_failed", "count"), 1.0);
    assert!(
        stale
            .stderr()
            .contains("a Response was used after Close or after the iteration that sent it"),
        "{}",
        stale.stderr()
    );
}

/// `wload compile` takes a Go test (a core module that becomes a
/// component when loaded) like a component, and the `.cwasm` runs.
#[test]
fn go_tests_compile_ahead_of_time() {
    let hello = go().hello.clone();
    let cwasm = scratch("go_compile").join("hello.cwasm");
    let out = wload()
        .arg("compile")
        .arg(&hello)
        .arg("-o")
        .arg(&cwasm)
        .output()
        .expect("run wload compile");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let server = server();
    let run = run_file(
        "go_compiled",
        &cwasm,
        &server.base_url(),
        "--vus 1 --iterations 10",
        LIMIT,
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(server.stats.requests(), 10);
    assert_eq!(run.check("status is 200"), (10, 0));
}
