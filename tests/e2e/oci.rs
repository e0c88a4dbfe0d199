//! Shipping plugins through a real OCI registry: Debian's
//! `docker-registry` (the CNCF distribution server), started by each test
//! on a free loopback port with its storage in scratch. The har-replay
//! plugin is pushed, pulled into a fresh folder with the lock file
//! written, and the pulled file is run against the target server; a moved
//! tag, a tampered blob and a wrong login are refused; a pull by digest
//! and a restore from the lock file give the pinned bytes back. The
//! session library plugin makes the same trip and is composed, pulled,
//! into a test.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::support::{self, Daemon, plugin, run, scratch, server, wload};

const LIMIT: Duration = Duration::from_secs(120);

/// A registry on 127.0.0.1, storing under `dir/storage`, killed on drop.
struct Registry {
    _daemon: Daemon,
    host: String,
    storage: PathBuf,
}

/// The bcrypt hash (cost 5, to keep the test quick) of `s3cret`, the
/// password of the user `alice` in the registry with a login.
const ALICE_HTPASSWD: &str = "alice:$2b$05$qBUtCLypwZiKPGdkwwMEPO.vpZjPkZVjzDkkSAU8/LjSw6Duzznyq\n";

impl Registry {
    fn start(dir: &Path, login: bool) -> Registry {
        support::debian_packages(&["docker-registry"]);
        let port = support::free_port();
        let storage = dir.join("storage");
        let mut config = format!(
            "version: 0.1\n\
             log:\n  level: info\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n\
             http:\n  addr: 127.0.0.1:{port}\n",
            storage.display()
        );
        if login {
            let htpasswd = dir.join("htpasswd");
            std::fs::write(&htpasswd, ALICE_HTPASSWD).expect("write htpasswd");
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: wload-test\n    path: {}\n",
                htpasswd.display()
            ));
        }
        let config_file = dir.join("registry.yml");
        std::fs::write(&config_file, config).expect("write the registry config");
        let mut cmd = Command::new("docker-registry");
        cmd.arg("serve").arg(&config_file);
        let mut daemon = Daemon::start(cmd, dir.join("registry.log"));
        let host = format!("127.0.0.1:{port}");
        // Ready when /v2/ answers (401 with a login: it asks for one).
        daemon.wait_until(Duration::from_secs(30), || {
            status_of(&host, "/v2/").is_some_and(|s| s == 200 || s == 401)
        });
        Registry {
            _daemon: daemon,
            host,
            storage,
        }
    }

    fn url(&self, name: &str) -> String {
        format!("oci://{}/{name}", self.host)
    }

    /// The file holding the blob `digest` in the registry's storage.
    fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.storage
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

/// The status code of `GET path` on `host`, or `None` if nothing answers.
fn status_of(host: &str, path: &str) -> Option<u16> {
    let mut s = TcpStream::connect(host).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").ok()?;
    let mut head = [0u8; 12];
    s.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// `wload plugin ARGS` in `dir`, with the registry credentials of the
/// test's own environment removed unless `env` sets them.
fn wload_plugin(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = wload();
    cmd.current_dir(dir).arg("plugin").args(args);
    for var in [
        "WLOAD_REGISTRY_USERNAME",
        "WLOAD_REGISTRY_PASSWORD",
        "DOCKER_CONFIG",
    ] {
        cmd.env_remove(var);
    }
    // No login of the machine's own user leaks in.
    cmd.env("HOME", dir);
    cmd.envs(env.iter().copied());
    run(cmd, LIMIT)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn refused(out: &Output, says: &[&str]) {
    assert_ne!(out.status.code(), Some(0), "not refused: {}", stderr(out));
    for s in says {
        assert!(stderr(out).contains(s), "no {s:?} in: {}", stderr(out));
    }
}

/// The digest as OCI writes it, computed with `sha256sum` so that the
/// test does not trust the code under test for it.
fn sha256(bytes: &[u8]) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run sha256sum");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(bytes)
        .expect("feed sha256sum");
    let out = child.wait_with_output().expect("sha256sum");
    let text = String::from_utf8_lossy(&out.stdout);
    format!("sha256:{}", text.split_whitespace().next().expect("a hash"))
}

/// The lock file's `digest` for `source`.
fn pinned(lock: &Path, source: &str) -> String {
    let text = std::fs::read_to_string(lock).expect("the lock file was written");
    let doc: toml::Value = toml::from_str(&text).expect("the lock file is TOML");
    let entry = doc["plugin"]
        .as_array()
        .expect("plugin entries")
        .iter()
        .find(|e| e["source"].as_str() == Some(source))
        .unwrap_or_else(|| panic!("no entry for {source} in:\n{text}"));
    entry["digest"].as_str().expect("digest").to_owned()
}

/// Replays the har-replay plugin's example recording with `wasm` against a
/// fresh target server: two iterations, every check passing.
fn replay_with(dir: &Path, wasm: &Path) {
    let server = server();
    let har = support::repo_root().join("plugins/har-replay/example.har");
    let mut cmd = wload();
    cmd.current_dir(dir)
        .arg("run")
        .arg(wasm)
        .arg("-p")
        .arg(format!("har=@{}", har.display()))
        .arg("-p")
        .arg(format!("base-url={}", server.base_url()))
        .args(["-p", "think=none", "--iterations", "2", "--quiet"]);
    let out = run(cmd, LIMIT);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(
        server.stats.requests(),
        2 * 6,
        "the pulled plugin did not replay"
    );
}

/// Push, pull into a fresh folder (lock written), run the pulled file;
/// the same file pushes to the same digest; a tag moved to other content
/// is refused against the lock, the pinned digest still pulls, `--update`
/// re-pins; a pull of the lock file alone restores the pinned bytes; a
/// blob tampered with in the registry's storage is refused.
#[test]
fn a_pushed_plugin_pulls_pinned_and_runs() {
    let dir = scratch("oci-push-pull");
    let registry = Registry::start(&dir, false);
    let original = plugin("har-replay");
    let bytes = std::fs::read(&original).expect("the built plugin");
    let tag = registry.url("wload/har-replay:0.1.0");

    let pushed = ok(&wload_plugin(
        &dir,
        &["push", original.to_str().expect("path"), &tag, "--insecure"],
        &[],
    ));
    let prefix = format!("{}@sha256:", registry.url("wload/har-replay"));
    let digest = pushed
        .strip_prefix(&prefix)
        .map(|hex| format!("sha256:{hex}"))
        .unwrap_or_else(|| panic!("push printed {pushed:?}, not {prefix}…"));
    let again = ok(&wload_plugin(
        &dir,
        &["push", original.to_str().expect("path"), &tag, "--insecure"],
        &[],
    ));
    assert_eq!(again, pushed, "the same file pushed to another digest");

    // A fresh folder: the plugin, the lock file, nothing else.
    let fresh = dir.join("fresh");
    std::fs::create_dir_all(&fresh).expect("mkdir");
    ok(&wload_plugin(&fresh, &["pull", &tag, "--insecure"], &[]));
    let pulled = fresh.join("har-replay.wasm");
    assert_eq!(std::fs::read(&pulled).expect("pulled file"), bytes);
    let lock = fresh.join("wload.lock");
    assert_eq!(pinned(&lock, &tag), digest);
    let lock_text = std::fs::read_to_string(&lock).expect("lock");
    assert!(
        lock_text.contains(&format!("component = \"{}\"", sha256(&bytes))),
        "{lock_text}"
    );
    assert!(
        lock_text.contains("file = \"har-replay.wasm\""),
        "{lock_text}"
    );
    replay_with(&fresh, &pulled);

    // The tag moves to other content: the same plugin with a custom
    // section appended (id 0, 7 bytes: the name "notes" and one byte;
    // still a valid component, other bytes).
    let mut moved = bytes.clone();
    moved.extend_from_slice(&[0, 7, 5, b'n', b'o', b't', b'e', b's', b'!']);
    let moved_file = dir.join("moved.wasm");
    std::fs::write(&moved_file, &moved).expect("write");
    let moved_digest = ok(&wload_plugin(
        &dir,
        &[
            "push",
            moved_file.to_str().expect("path"),
            &tag,
            "--insecure",
        ],
        &[],
    ));
    let moved_digest = moved_digest
        .strip_prefix(&prefix)
        .map(|hex| format!("sha256:{hex}"))
        .expect("a digest");
    assert_ne!(moved_digest, digest);
    refused(
        &wload_plugin(&fresh, &["pull", &tag, "--insecure"], &[]),
        &[
            &format!("now points at {moved_digest}, but the lock file pins {digest}"),
            "--update",
        ],
    );
    assert_eq!(
        std::fs::read(&pulled).expect("file"),
        bytes,
        "a refused pull wrote"
    );
    assert_eq!(
        pinned(&lock, &tag),
        digest,
        "a refused pull changed the lock"
    );

    // By digest: the pinned bytes, whatever the tag says now.
    let by_digest = format!("{}@{digest}", registry.url("wload/har-replay"));
    let elsewhere = dir.join("by-digest");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    ok(&wload_plugin(
        &elsewhere,
        &["pull", &by_digest, "--insecure", "-o", "pinned.wasm"],
        &[],
    ));
    assert_eq!(
        std::fs::read(elsewhere.join("pinned.wasm")).expect("file"),
        bytes
    );
    assert_eq!(pinned(&elsewhere.join("wload.lock"), &by_digest), digest);

    // The lock alone brings the pinned bytes back (a fresh clone).
    std::fs::remove_file(&pulled).expect("rm");
    ok(&wload_plugin(&fresh, &["pull", "--insecure"], &[]));
    assert_eq!(std::fs::read(&pulled).expect("restored"), bytes);

    // --update takes the moved tag and pins it.
    ok(&wload_plugin(
        &fresh,
        &["pull", &tag, "--insecure", "--update"],
        &[],
    ));
    assert_eq!(pinned(&lock, &tag), moved_digest);
    assert_eq!(std::fs::read(&pulled).expect("file"), moved);

    // Tampered in the registry's storage: same size, other bytes.
    let blob = registry.blob_file(&sha256(&bytes));
    let mut tampered = std::fs::read(&blob).expect("the stored blob");
    let last = tampered.len() - 1;
    tampered[last] ^= 0xff;
    std::fs::write(&blob, &tampered).expect("tamper");
    let out = wload_plugin(&elsewhere, &["pull", &by_digest, "--insecure"], &[]);
    refused(&out, &["cannot download the component of"]);
    assert!(
        stderr(&out).contains(&sha256(&bytes)),
        "the refusal does not name the expected digest: {}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read(elsewhere.join("pinned.wasm")).expect("file"),
        bytes,
        "a refused pull overwrote the file"
    );
}

/// A registry with a login: refused without credentials (saying so), a
/// push with them from the environment, a pull with them from a Docker
/// config.json; a test (not a plugin) is refused before any upload.
#[test]
fn a_registry_login_comes_from_the_environment_or_docker_config() {
    let dir = scratch("oci-login");
    let registry = Registry::start(&dir, true);
    let original = plugin("har-replay");
    let file = original.to_str().expect("path");
    let tag = registry.url("team/har-replay:1");

    refused(
        &wload_plugin(&dir, &["push", file, &tag, "--insecure"], &[]),
        &["cannot upload the component to"],
    );
    refused(
        &wload_plugin(
            &dir,
            &["push", file, &tag, "--insecure"],
            &[
                ("WLOAD_REGISTRY_USERNAME", "alice"),
                ("WLOAD_REGISTRY_PASSWORD", "wrong"),
            ],
        ),
        &["cannot upload the component to"],
    );
    ok(&wload_plugin(
        &dir,
        &["push", file, &tag, "--insecure"],
        &[
            ("WLOAD_REGISTRY_USERNAME", "alice"),
            ("WLOAD_REGISTRY_PASSWORD", "s3cret"),
        ],
    ));

    let docker = dir.join("docker");
    std::fs::create_dir_all(&docker).expect("mkdir");
    // base64 of alice:s3cret
    std::fs::write(
        docker.join("config.json"),
        format!(
            r#"{{"auths": {{"{}": {{"auth": "YWxpY2U6czNjcmV0"}}}}}}"#,
            registry.host
        ),
    )
    .expect("write config.json");
    let fresh = dir.join("fresh");
    std::fs::create_dir_all(&fresh).expect("mkdir");
    refused(
        &wload_plugin(&fresh, &["pull", &tag, "--insecure"], &[]),
        &["cannot fetch the manifest of"],
    );
    ok(&wload_plugin(
        &fresh,
        &["pull", &tag, "--insecure"],
        &[("DOCKER_CONFIG", docker.to_str().expect("path"))],
    ));
    assert_eq!(
        std::fs::read(fresh.join("har-replay.wasm")).expect("pulled"),
        std::fs::read(&original).expect("built")
    );

    let test = support::guest("hello");
    refused(
        &wload_plugin(
            &dir,
            &["push", test.to_str().expect("path"), &tag, "--insecure"],
            &[
                ("WLOAD_REGISTRY_USERNAME", "alice"),
                ("WLOAD_REGISTRY_PASSWORD", "s3cret"),
            ],
        ),
        &["is a test, not a plugin"],
    );
}

/// A library plugin (the session flow: it exports an interface and has no
/// description) is pushed, pulled into a fresh folder with the lock file
/// written, described by `wload plugin info`, and the pulled file is
/// composed from there into the Rust login example, which logs in through
/// it against the target server.
#[test]
fn a_library_plugin_is_pushed_pulled_and_composed_into_a_test() {
    let dir = scratch("oci-library");
    let registry = Registry::start(&dir, false);
    let original = plugin("session");
    let bytes = std::fs::read(&original).expect("the built plugin");
    let tag = registry.url("wload/session:0.1.0");

    let out = wload_plugin(
        &dir,
        &["push", original.to_str().expect("path"), &tag, "--insecure"],
        &[],
    );
    let pushed = ok(&out);
    assert!(
        pushed.starts_with(&format!("{}@sha256:", registry.url("wload/session"))),
        "push printed {pushed:?}"
    );
    assert!(
        stderr(&out).contains("pushed the library plugin wload:session 0.1.0"),
        "{}",
        stderr(&out)
    );

    let fresh = dir.join("fresh");
    std::fs::create_dir_all(&fresh).expect("mkdir");
    ok(&wload_plugin(&fresh, &["pull", &tag, "--insecure"], &[]));
    let pulled = fresh.join("session.wasm");
    assert_eq!(std::fs::read(&pulled).expect("pulled file"), bytes);
    assert_eq!(
        pinned(&fresh.join("wload.lock"), &tag),
        pushed
            .rsplit_once('@')
            .map(|(_, d)| d.to_owned())
            .expect("a digest")
    );
    let info = ok(&wload_plugin(&fresh, &["info", "session.wasm"], &[]));
    assert!(info.contains("wload:session/login@0.1.0"), "{info}");

    let server = server();
    let mut cmd = wload();
    cmd.current_dir(&fresh)
        .arg("run")
        .arg(support::guest("login"))
        .args(["--with", "session.wasm", "--vus", "1", "--iterations", "5"])
        .arg("-e")
        .arg(format!("BASE_URL={}", server.base_url()))
        .arg("--quiet");
    let run = support::run_exporting(cmd, &fresh.join("summary.json"), LIMIT);
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(run.check("login is 200"), (1, 0));
    assert_eq!(run.check("me is the logged-in user"), (5, 0));
    let sessions = &server.stats.sessions;
    assert_eq!(sessions.logins(), 1, "logins the server saw");
    assert_eq!(
        sessions.authorized(),
        5,
        "authenticated calls the server saw"
    );
    assert_eq!(sessions.unauthorized(), 0);
}
