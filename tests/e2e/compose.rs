//! Library plugins composed into tests (`wload run TEST --with PLUGIN`):
//! the session plugin of `plugins/` linked into the Rust and the
//! JavaScript login examples, run against the target server's login API
//! (which counts the logins and the authenticated calls it saw); the
//! composition cached, so a second run reuses it; and each kind of
//! mismatch refused before any request, naming the test's import and the
//! plugin's export.
//!
//! The mismatching tests are the Rust example with its import renamed in
//! place (same length, so the component stays valid): what a test built
//! against another version of the interface, or another interface,
//! looks like to wload.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use serde_json::json;
use wload_target::TargetServer;

use crate::languages::{lang_dir, must};
use crate::support::{Finished, guest, plugin, repo_root, run_exporting, scratch, server, wload};

/// A first run compiles the test (a minute on a loaded machine).
const LIMIT: Duration = Duration::from_secs(300);

/// Each VU's iterations: every fifth logs out, so a VU of 5 logs in once
/// and out once.
const VUS: u64 = 2;
const PER_VU: u64 = 5;

/// How a run names the session plugin.
enum With {
    Nothing,
    /// `--with PATH`.
    Flag,
    /// `"with": ["session.wasm"]` in the options file, next to it.
    OptionsFile,
}

/// `wload run TEST` against `server`, with the compile cache in `cache`
/// (to look at its entries), the options file running `VUS` VUs of
/// `PER_VU` iterations each.
fn run_login(name: &str, test: &Path, with: With, server: &TargetServer, cache: &Path) -> Finished {
    let dir = scratch(name);
    let mut options = json!({"scenarios": {"login": {
        "executor": "per-vu-iterations", "vus": VUS, "iterations": PER_VU
    }}});
    let mut cmd = wload();
    cmd.env("WLOAD_CACHE_DIR", cache).arg("run").arg(test);
    match with {
        With::Nothing => {}
        With::Flag => {
            cmd.arg("--with").arg(session());
        }
        With::OptionsFile => {
            std::fs::copy(session(), dir.join("session.wasm")).expect("copy the plugin");
            options["with"] = json!(["session.wasm"]);
        }
    }
    let options_file = dir.join("options.json");
    std::fs::write(&options_file, options.to_string()).expect("write the options file");
    let export = dir.join("summary.json");
    cmd.arg("--config")
        .arg(&options_file)
        .arg("-e")
        .arg(format!("BASE_URL={}", server.base_url()))
        .arg("--quiet");
    run_exporting(cmd, &export, LIMIT)
}

fn session() -> PathBuf {
    plugin("session")
}

/// examples/js/login built against its own world (wload's plus the
/// plugin's interface), once per test process.
fn js_login() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let example = repo_root().join("examples/js/login");
        let out = lang_dir().join("js-login.wasm");
        let mut build = wload();
        build
            .arg("build")
            .arg(example.join("script.js"))
            .arg("--with")
            .arg(session())
            .arg("-o")
            .arg(&out);
        must(build, "wload build examples/js/login --with session.wasm");
        out
    })
}

/// The `composed-*.cwasm` entries of a cache, with their modification
/// times.
fn composed_entries(cache: &Path) -> Vec<(PathBuf, SystemTime)> {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("composed-"))
        .map(|e| {
            let modified = e.metadata().and_then(|m| m.modified()).expect("mtime");
            (e.path(), modified)
        })
        .collect()
}

/// The run passed, every check of the flow passed as often as the flow
/// ran it, and the server saw each VU log in and out once and every
/// iteration's call with a valid token, none without.
fn assert_logged_in(run: &Finished, server: &TargetServer, runs: u64) {
    assert_eq!(
        run.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout(),
        run.stderr()
    );
    let iterations = VUS * PER_VU;
    assert_eq!(run.check("login is 200"), (VUS, 0));
    assert_eq!(run.check("logout is 204"), (VUS, 0));
    assert_eq!(run.check("me is 200"), (iterations, 0));
    assert_eq!(run.check("me is the logged-in user"), (iterations, 0));
    let sessions = &server.stats.sessions;
    assert_eq!(sessions.logins(), runs * VUS, "logins the server saw");
    assert_eq!(sessions.logouts(), runs * VUS, "logouts the server saw");
    assert_eq!(
        sessions.authorized(),
        runs * iterations,
        "authenticated calls the server saw"
    );
    assert_eq!(sessions.unauthorized(), 0, "calls without a valid token");
    assert_eq!(sessions.refused_logins(), 0);
    // The plugin's requests are the VU's: measured and named like the test's.
    let reqs = run.metric("http_reqs", "count") as u64;
    assert_eq!(reqs, iterations + 2 * VUS, "requests in the summary");
}

/// The Rust example composed with the session plugin: the server saw the
/// logins and the authenticated calls; the composition went into the
/// cache once, and the second run took it from there (the entry was not
/// written again) and ran the same.
#[test]
fn a_rust_test_logs_in_through_the_session_plugin_and_the_composition_is_cached() {
    let server = server();
    let cache = scratch("compose-rust-cache");
    let first = run_login("compose-rust", &guest("login"), With::Flag, &server, &cache);
    assert_logged_in(&first, &server, 1);
    let entries = composed_entries(&cache);
    assert_eq!(entries.len(), 1, "one composed entry: {entries:?}");

    let second = run_login(
        "compose-rust-again",
        &guest("login"),
        With::Flag,
        &server,
        &cache,
    );
    assert_logged_in(&second, &server, 2);
    assert_eq!(
        composed_entries(&cache),
        entries,
        "the second run reuses the cached composition"
    );
}

/// The plugin named in the options file (`"with"`, relative to the file)
/// instead of a flag, for the JavaScript example: a test in another
/// language links to the same Rust plugin.
#[test]
fn a_javascript_test_logs_in_through_the_session_plugin() {
    let server = server();
    let cache = scratch("compose-js-cache");
    let run = run_login("compose-js", js_login(), With::OptionsFile, &server, &cache);
    assert_logged_in(&run, &server, 1);
    assert_eq!(composed_entries(&cache).len(), 1);
}

/// The Rust example with every `from` in its bytes replaced by `to`.
fn patched(name: &str, from: &str, to: &str) -> PathBuf {
    assert_eq!(
        from.len(),
        to.len(),
        "a same-length rename keeps the component valid"
    );
    let bytes = std::fs::read(guest("login")).expect("read the login example");
    let (from, to) = (from.as_bytes(), to.as_bytes());
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut replaced = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
            replaced += 1;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    assert!(
        replaced > 0,
        "the example has no {:?}",
        String::from_utf8_lossy(from)
    );
    let path = scratch(name).join("login.wasm");
    std::fs::write(&path, out).expect("write the patched test");
    path
}

/// A refused run: not 0, nothing sent, and stderr naming every `needle`.
fn assert_refused(run: &Finished, server: &TargetServer, needles: &[&str]) {
    let stderr = run.stderr();
    assert_ne!(run.code(), Some(0), "stderr:\n{stderr}");
    for needle in needles {
        assert!(stderr.contains(needle), "{needle:?} not in:\n{stderr}");
    }
    assert_eq!(server.stats.requests(), 0, "a refused run sends nothing");
}

/// Each mismatch is refused before any request, naming both sides: a
/// test built against 0.2.0 of the interface (the plugin exports 0.1.0),
/// one that imports a function the plugin's interface lacks, one that
/// imports an interface no given plugin exports, and the test run
/// without the plugin at all.
#[test]
fn mismatches_are_refused_naming_the_tests_import_and_the_plugins_export() {
    let server = server();
    let cache = scratch("compose-mismatch-cache");
    let plugin_name = session().display().to_string();

    let v2 = patched(
        "compose-v2",
        "wload:session/login@0.1.0",
        "wload:session/login@0.2.0",
    );
    let run = run_login("compose-v2-run", &v2, With::Flag, &server, &cache);
    assert_refused(
        &run,
        &server,
        &[
            "version mismatch",
            &format!("{} imports wload:session/login@0.2.0", v2.display()),
            &format!("the plugin {plugin_name} exports wload:session/login@0.1.0"),
        ],
    );

    let other_function = patched("compose-logoff", "logout", "logoff");
    let run = run_login(
        "compose-logoff-run",
        &other_function,
        With::Flag,
        &server,
        &cache,
    );
    assert_refused(
        &run,
        &server,
        &[
            "interface mismatch",
            &format!(
                "{} imports wload:session/login@0.1.0",
                other_function.display()
            ),
            &format!("the export wload:session/login@0.1.0 of the plugin {plugin_name}"),
            "logoff",
        ],
    );

    let other_interface = patched("compose-sessiox", "wload:session/", "wload:sessiox/");
    let run = run_login(
        "compose-sessiox-run",
        &other_interface,
        With::Flag,
        &server,
        &cache,
    );
    assert_refused(
        &run,
        &server,
        &[
            "imports wload:sessiox/login@0.1.0, which no plugin given with --with exports",
            &format!("{plugin_name} exports wload:session/login@0.1.0"),
        ],
    );

    let run = run_login(
        "compose-without",
        &guest("login"),
        With::Nothing,
        &server,
        &cache,
    );
    assert_refused(
        &run,
        &server,
        &[
            "imports wload:session/login@0.1.0, which wload does not provide",
            "--with",
        ],
    );
    assert!(
        composed_entries(&cache).is_empty(),
        "a refused composition is not cached"
    );
}

/// The JavaScript example run from its source with the plugin, as a user
/// runs it: the build reads the plugin's interface from the plugin, and
/// the run links the same plugin.
#[test]
fn a_javascript_script_run_from_source_logs_in_through_the_plugin() {
    let server = server();
    let cache = scratch("compose-js-source-cache");
    let script = repo_root().join("examples/js/login/script.js");
    let run = run_login("compose-js-source", &script, With::Flag, &server, &cache);
    assert_logged_in(&run, &server, 1);
}

/// A script that imports a plugin's interface is refused at its build
/// when no plugin given exports it, naming the interface and `--with`,
/// and nothing is sent.
#[test]
fn a_javascript_script_without_its_plugin_is_refused_at_the_build() {
    let server = server();
    let cache = scratch("compose-js-without-cache");
    let script = repo_root().join("examples/js/login/script.js");
    let run = run_login(
        "compose-js-without",
        &script,
        With::Nothing,
        &server,
        &cache,
    );
    assert_refused(
        &run,
        &server,
        &[
            "imports wload:session/login@0.1.0, a plugin's interface, and no plugin was given",
            "--with PLUGIN.wasm",
        ],
    );
}
