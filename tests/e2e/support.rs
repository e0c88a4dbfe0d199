//! Shared by the end-to-end tests: building the guests once, starting a
//! target server, running the binary with a time limit, and reading the
//! summary export.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use wload_target::TargetServer;

#[path = "../../crates/wload/guests.rs"]
mod guests;

pub use guests::repo_root;

/// Build every example guest once per test process; returns the folder
/// holding the `.wasm` files.
pub fn guests() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = repo_root();
        let status = guests::build_guests(&root, None)
            .expect("cannot run cargo to build the example guests");
        assert!(status.success(), "building the example guests failed");
        guests::guest_dir(&root)
    })
}

pub fn guest(name: &str) -> PathBuf {
    guests().join(format!("{name}.wasm"))
}

/// A scenario plugin of `plugins/` (built once per test process, with
/// all the others): the path of its `.wasm`.
pub fn plugin(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = repo_root();
        let status =
            guests::build_plugins(&root, None).expect("cannot run cargo to build the plugins");
        assert!(status.success(), "building the plugins failed");
        guests::guest_dir(&root)
    })
    .join(format!("{}.wasm", name.replace('-', "_")))
}

/// A runtime for the target servers of all tests.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime for the test servers")
    })
}

/// A fresh target server on a free loopback port.
pub fn server() -> TargetServer {
    runtime()
        .block_on(TargetServer::start(([127, 0, 0, 1], 0).into()))
        .expect("start the target server")
}

/// A scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = repo_root().join("target").join("e2e-scratch").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// The binary under test, with its compile cache inside `target/`.
/// `--config FILE` for a k6 options object written to a scratch file.
pub fn options_file(name: &str, options: &serde_json::Value) -> String {
    let path = scratch(&format!("{name}-options")).join("options.json");
    std::fs::write(&path, options.to_string()).expect("write the options file");
    format!("--config {}", path.display())
}

pub fn wload() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_wload"));
    cmd.env(
        "WLOAD_CACHE_DIR",
        repo_root().join("target").join("e2e-cache"),
    );
    for var in [
        "WLOAD_VUS",
        "WLOAD_DURATION",
        "WLOAD_ITERATIONS",
        "WLOAD_VU_MEMORY",
        "WLOAD_MAX_RESPONSE_BODY_SIZE",
        "WLOAD_BLACKLIST_IPS",
        "WLOAD_BLOCK_HOSTNAMES",
        "WLOAD_START_AT",
        "WLOAD_PYTHON_RUNTIME",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Run `cmd`, killing it if it takes longer than `limit`.
pub fn run(mut cmd: Command, limit: Duration) -> Output {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start wload");
    let started = Instant::now();
    loop {
        if let Some(_status) = child.try_wait().expect("wait for wload") {
            return child.wait_with_output().expect("collect wload output");
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect wload output");
            panic!(
                "wload did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A finished run with its summary export parsed.
pub struct Finished {
    pub output: Output,
    pub summary: Value,
}

impl Finished {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }
    /// `metrics.<metric>.<field>` of the summary export.
    pub fn metric(&self, metric: &str, field: &str) -> f64 {
        self.summary["metrics"][metric][field]
            .as_f64()
            .unwrap_or_else(|| panic!("no metrics.{metric}.{field} in {:#}", self.summary))
    }
    /// `(passes, fails)` of one check.
    pub fn check(&self, name: &str) -> (u64, u64) {
        let checks = self.summary["root_group"]["checks"]
            .as_array()
            .expect("checks array");
        let c = checks
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no check {name:?} in {checks:#?}"));
        (c["passes"].as_u64().unwrap(), c["fails"].as_u64().unwrap())
    }
}

/// `wload run <guest> <args> --summary-export …` against `base_url`;
/// `args` are split at spaces.
pub fn run_test(
    name: &str,
    guest_name: &str,
    base_url: &str,
    args: &str,
    limit: Duration,
) -> Finished {
    run_file(name, &guest(guest_name), base_url, args, limit)
}

/// [`run_test`] for a test file given by path (guests of other languages).
pub fn run_file(name: &str, test: &Path, base_url: &str, args: &str, limit: Duration) -> Finished {
    let dir = scratch(name);
    let export = dir.join("summary.json");
    let mut cmd = wload();
    cmd.arg("run")
        .arg(test)
        .args(args.split_whitespace())
        .arg("-e")
        .arg(format!("BASE_URL={base_url}"))
        .arg("--quiet");
    run_exporting(cmd, &export, limit)
}

/// `cmd` (a `wload run`) with `--summary-export EXPORT`, its summary
/// read back (`null` when it wrote none).
pub fn run_exporting(mut cmd: Command, export: &Path, limit: Duration) -> Finished {
    cmd.arg("--summary-export").arg(export);
    let output = run(cmd, limit);
    let summary = std::fs::read_to_string(export)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    Finished { output, summary }
}

/// `wload run <plugin> ARGS --summary-export …` from `dir` (where `-p
/// NAME=@FILE` paths are relative to), `args` as given.
pub fn run_plugin(name: &str, dir: &Path, args: &[String], limit: Duration) -> Finished {
    let export = dir.join("summary.json");
    let mut cmd = wload();
    cmd.current_dir(dir)
        .arg("run")
        .arg(plugin(name))
        .args(args)
        .arg("--quiet");
    run_exporting(cmd, &export, limit)
}

/// `wload plugin info PLUGIN ARGS`'s standard output; it must exit 0.
pub fn plugin_info(plugin: &Path, args: &[&str], limit: Duration) -> String {
    let mut cmd = wload();
    cmd.args(["plugin", "info"]).arg(plugin).args(args);
    let out = run(cmd, limit);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// [`run_test`] against a fresh target server, within two minutes; the
/// run must exit 0.
pub fn run_ok(name: &str, guest_name: &str, args: &str) -> (TargetServer, Finished) {
    let server = server();
    let run = run_test(
        name,
        guest_name,
        &server.base_url(),
        args,
        Duration::from_secs(120),
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    (server, run)
}

/// Make sure Debian's `packages` are installed (the suite's real servers
/// and browser: Prometheus, InfluxDB, Chromium, a registry), installing
/// the missing ones with `apt-get update` then `apt-get install`. Once per
/// test process and one at a time: apt holds a lock, and tests run in
/// parallel threads.
pub fn debian_packages(packages: &[&str]) {
    static APT: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let mut updated = APT.lock().unwrap_or_else(|e| e.into_inner());
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| {
            let out = Command::new("dpkg-query")
                .args(["-W", "-f=${Status}", p])
                .output();
            !matches!(out, Ok(o) if String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        })
        .collect();
    if missing.is_empty() {
        return;
    }
    let apt = |args: &[&str]| {
        let out = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .expect("run apt-get (the suite installs its real servers from Debian's packages)");
        assert!(
            out.status.success(),
            "apt-get {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    if !*updated {
        apt(&["update", "-q"]);
        *updated = true;
    }
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(&missing);
    apt(&args);
}

/// A loopback port that was free a moment ago, for servers that cannot
/// be told to bind port 0 and say which port they got (Prometheus,
/// InfluxDB). Another process may take it in between: rare on a test
/// machine, and the server's start then fails loudly.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a loopback port")
        .port()
}

/// A server process the test started: killed (by its own PID, nothing
/// else) and reaped when dropped; its output goes to a log file that
/// failure messages can show.
pub struct Daemon {
    pub child: std::process::Child,
    pub log: PathBuf,
}

impl Daemon {
    /// Start `cmd` with stdout and stderr into `log`.
    pub fn start(mut cmd: Command, log: PathBuf) -> Daemon {
        let file = std::fs::File::create(&log).expect("create the server's log file");
        let err = file.try_clone().expect("clone the log file handle");
        cmd.stdin(Stdio::null()).stdout(file).stderr(err);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        Daemon { child, log }
    }

    /// The log so far, for assertion messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Wait until `ready()` holds, up to `limit`; panics with the log if
    /// the server exits or never gets ready.
    pub fn wait_until(&mut self, limit: Duration, mut ready: impl FnMut() -> bool) {
        let started = Instant::now();
        while !ready() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "the server exited ({status}) before it was ready:\n{}",
                    self.log()
                );
            }
            assert!(
                started.elapsed() < limit,
                "the server was not ready within {limit:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
