//! `wload serve` end to end: the real service process on a loopback port,
//! its worker processes, the real CLI client, and plain HTTP requests
//! like curl's. Every target is on 127.0.0.1; the egress tests prove
//! denials with a second loopback listener that must see nothing.
//!
//! The service's workers are its children: a watchdog thread per service
//! reads the RSS of the service and all its children and kills the
//! service (and so, by `PR_SET_PDEATHSIG`, its workers) past a bound, so
//! that a broken limit shows as a failed test, not a machine out of
//! memory.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{guest, run, scratch, server, wload};

/// RSS bound of a service and its workers together.
const RSS_LIMIT_KIB: u64 = 3 << 20;

/// A running `wload serve`.
pub struct Service {
    child: Option<Child>,
    pub addr: String,
    pub data: PathBuf,
    pub admin: String,
    log: Arc<Mutex<String>>,
    watching: Arc<AtomicBool>,
    pub killed_by_watchdog: Arc<AtomicBool>,
}

impl Service {
    /// Start a service on a fresh data directory.
    pub fn start(name: &str) -> Service {
        let data = scratch(&format!("service-{name}"));
        Service::start_on(data)
    }

    /// Start a service on `data` (kept from a previous service).
    pub fn start_on(data: PathBuf) -> Service {
        Service::start_with(data, &[])
    }

    /// Start a service on `data` with more flags.
    pub fn start_with(data: PathBuf, flags: &[&str]) -> Service {
        let admin = "admin-secret-for-tests".to_owned();
        let token_file = data.join("admin-token");
        std::fs::write(&token_file, format!("{admin}\n")).expect("write the admin token");
        let mut cmd = wload();
        cmd.arg("serve")
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--data")
            .arg(data.join("state"))
            .arg("--admin-token-file")
            .arg(&token_file)
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start wload serve");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Some(addr) = line.split("listening on http://").nth(1) {
                        let _ = tx.send(addr.trim().to_owned());
                    }
                    log.lock().unwrap().push_str(&format!("{line}\n"));
                }
            });
        }
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("wload serve did not listen: {}", log.lock().unwrap()));
        let watching = Arc::new(AtomicBool::new(true));
        let killed_by_watchdog = Arc::new(AtomicBool::new(false));
        watchdog(child.id(), watching.clone(), killed_by_watchdog.clone());
        Service {
            child: Some(child),
            addr,
            data,
            admin,
            log,
            watching,
            killed_by_watchdog,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// `kill -9` the service; returns its data directory.
    pub fn kill9(mut self) -> PathBuf {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.data.clone()
    }

    /// SIGTERM, and wait for the service to stop its runs and exit.
    pub fn terminate(mut self) -> (Option<i32>, String) {
        let Some(mut child) = self.child.take() else {
            return (None, self.log());
        };
        // SAFETY: kill(2) on our own child, not yet reaped.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let started = Instant::now();
        let code = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status.code();
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("wload serve did not stop on SIGTERM: {}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // The log thread sees EOF now.
        std::thread::sleep(Duration::from_millis(100));
        (code, self.log())
    }

    /// A request like curl's: `(status, JSON body)` (`Null` for no JSON).
    pub fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
    ) -> (u16, Value) {
        let (status, bytes) = self.raw(method, path, token, body, "application/json");
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// A request; the raw body.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<&[u8]>,
        content_type: &str,
    ) -> (u16, Vec<u8>) {
        http(&self.addr, method, path, token, body, content_type)
    }

    /// Create a tenant; returns `(id, token)`.
    pub fn tenant(&self, name: &str, quotas: Value, egress: Value) -> (String, String) {
        let body = json!({"name": name, "quotas": quotas, "egress": egress}).to_string();
        let (status, v) = self.call(
            "POST",
            "/v1/tenants",
            Some(&self.admin),
            Some(body.as_bytes()),
        );
        assert_eq!(status, 201, "create tenant {name}: {v}");
        (
            v["tenant"]["id"].as_str().unwrap().to_owned(),
            v["token"].as_str().unwrap().to_owned(),
        )
    }

    /// Upload a guest; returns its test id.
    pub fn upload(&self, token: &str, path: &Path) -> String {
        let bytes = std::fs::read(path).expect("read the guest");
        let (status, body) = self.raw(
            "POST",
            "/v1/tests?name=t.wasm",
            Some(token),
            Some(&bytes),
            "application/wasm",
        );
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert!(status == 201 || status == 200, "upload: {status} {v}");
        v["id"].as_str().unwrap().to_owned()
    }

    /// Start a run through the API; `(status, body)`.
    pub fn start_run(&self, token: &str, test: &str, options: Value, env: Value) -> (u16, Value) {
        let body = json!({"test": test, "options": options, "env": env}).to_string();
        self.call("POST", "/v1/runs", Some(token), Some(body.as_bytes()))
    }

    /// Wait until a run has ended; returns its record.
    pub fn wait_run(&self, token: &str, id: &str, limit: Duration) -> Value {
        let started = Instant::now();
        loop {
            let (status, v) = self.call("GET", &format!("/v1/runs/{id}"), Some(token), None);
            assert_eq!(status, 200, "{v}");
            let state = v["status"].as_str().unwrap_or("").to_owned();
            if !matches!(state.as_str(), "starting" | "running") {
                return v;
            }
            assert!(
                started.elapsed() < limit,
                "run {id} still {state} after {limit:?}; log: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The k6 summary export of a finished run.
    pub fn summary(&self, token: &str, id: &str) -> Value {
        let (status, v) = self.call("GET", &format!("/v1/runs/{id}/summary"), Some(token), None);
        assert_eq!(status, 200, "summary of {id}: {v}");
        v
    }

    /// `PATCH /v1/runs/ID/status` with a JSON body.
    pub fn patch_status(&self, token: &str, id: &str, body: &[u8]) -> (u16, Value) {
        self.call(
            "PATCH",
            &format!("/v1/runs/{id}/status"),
            Some(token),
            Some(body),
        )
    }

    /// PIDs of the service's worker processes now.
    pub fn workers(&self) -> Vec<u32> {
        children(self.pid())
    }

    /// `wload run --server … --token …` with these args.
    pub fn cli(&self, token: &str) -> Command {
        let mut cmd = wload();
        cmd.arg("run")
            .arg("--server")
            .arg(self.url())
            .arg("--token")
            .arg(token);
        cmd
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.watching.store(false, Ordering::Relaxed);
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Kill the service when it and its workers pass [`RSS_LIMIT_KIB`].
fn watchdog(pid: u32, watching: Arc<AtomicBool>, killed: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        while watching.load(Ordering::Relaxed) {
            let total: u64 = std::iter::once(pid).chain(children(pid)).map(rss_kib).sum();
            if total > RSS_LIMIT_KIB {
                killed.store(true, Ordering::Relaxed);
                // SAFETY: SIGKILL to the service, our child; `watching` is
                // cleared before the child is reaped in Drop, and a pid
                // reused in between would need the pid space to wrap.
                unsafe {
                    libc::kill(pid as libc::pid_t, libc::SIGKILL);
                }
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
}

/// Direct children of `pid`.
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        out.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    out
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// One HTTP/1.1 request on a fresh connection (`Connection: close`).
pub fn http(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
    content_type: &str,
) -> (u16, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).expect("connect to the service");
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .unwrap();
    let body = body.unwrap_or(b"");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(t) = token {
        head.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    if !body.is_empty() {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut payload = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        payload = dechunk(&payload);
    }
    (status, payload)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = data.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&data[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        let start = end + 2;
        out.extend_from_slice(&data[start..(start + size).min(data.len())]);
        data = &data[(start + size + 2).min(data.len())..];
    }
    out
}

/// A listener on 127.0.0.1 that counts the connections it accepts (and
/// closes them): the target a denied request must never reach.
pub struct Counter {
    pub port: u16,
    pub accepted: Arc<AtomicU64>,
}

impl Counter {
    pub fn start() -> Counter {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicU64::new(0));
        let count = accepted.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stream.is_ok() {
                    count.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Counter { port, accepted }
    }
}

/// `metrics.<metric>.<field>` of a summary export (0 when absent: a rate
/// with no passes has none).
fn metric(summary: &Value, metric: &str, field: &str) -> f64 {
    summary["metrics"][metric][field].as_f64().unwrap_or(0.0)
}

/// The egress policy that allows one loopback port.
fn allow(port: u16) -> Value {
    json!({ "allow": [format!("127.0.0.1:{port}")] })
}

fn port_of(base_url: &str) -> u16 {
    base_url
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .unwrap()
}

#[test]
fn a_run_on_the_service_shows_and_exits_as_a_local_run() {
    let target = server();
    let service = Service::start("cli");
    let (_, token) = service.tenant("cli", json!({}), allow(port_of(&target.base_url())));
    let dir = scratch("service-cli-run");
    let export = dir.join("summary.json");
    let hdr = dir.join("run.hlog");
    let mut cmd = service.cli(&token);
    cmd.arg(guest("hello"))
        .args(["--vus", "2", "--iterations", "20", "-e"])
        .arg(format!("BASE_URL={}", target.base_url()))
        .arg("--summary-export")
        .arg(&export)
        .arg("--out")
        .arg(format!("hdr={}", hdr.display()));
    let out = run(cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}\nservice: {}",
        service.log()
    );
    // The same header and summary as a local run.
    assert!(
        stderr.contains("scenarios:") || stderr.contains("executor"),
        "{stderr}"
    );
    assert!(
        stdout.contains("http_reqs") && stdout.contains("iterations"),
        "{stdout}"
    );
    // The same progress: the last drawing, status line and a bar.
    assert!(
        stderr.contains("running (") && stderr.contains("/2 VUs, 20 complete and 0 interrupted"),
        "{stderr}"
    );
    assert!(
        stderr.contains("] ") && stderr.contains(" 20 iters "),
        "{stderr}"
    );
    let summary: Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    assert_eq!(metric(&summary, "iterations", "count"), 20.0, "{summary:#}");
    assert_eq!(
        target.stats.requests(),
        metric(&summary, "http_reqs", "count") as u64
    );
    assert!(
        std::fs::read_to_string(&hdr)
            .unwrap()
            .contains("http_req_duration")
    );

    // On a terminal the bars are redrawn in place, as a local run's:
    // `script` gives the client one.
    let mut cmd = Command::new("script");
    let client = service.cli(&token);
    let mut line: Vec<String> = std::iter::once(client.get_program())
        .chain(client.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    line.push(guest("hello").display().to_string());
    line.extend(["--vus", "1", "--duration", "3s", "-e"].map(str::to_owned));
    line.push(format!("BASE_URL={}", target.base_url()));
    cmd.args(["-qfec", &line.join(" "), "/dev/null"]);
    for (k, v) in client.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = run(cmd, Duration::from_secs(120));
    let seen = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{seen}");
    assert!(
        seen.matches("\x1b[2Krunning (").count() >= 2 && seen.contains("\x1b[2A"),
        "redrawn in place: {seen:?}"
    );

    // A failing threshold: 99, as a local run.
    let options = crate::support::options_file(
        "service-cli-threshold",
        &json!({"thresholds": {"http_req_duration": ["max<0"]}}),
    );
    let mut cmd = service.cli(&token);
    cmd.arg(guest("hello"))
        .args(["--vus", "1", "--iterations", "3", "--quiet", "-e"])
        .arg(format!("BASE_URL={}", target.base_url()))
        .args(options.split_whitespace());
    let out = run(cmd, Duration::from_secs(120));
    assert_eq!(
        out.status.code(),
        Some(99),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A refused run: 104 and the limit named.
    let mut cmd = service.cli(&token);
    cmd.arg(guest("hello"))
        .args(["--vus", "5000", "--iterations", "5000", "-e"])
        .arg(format!("BASE_URL={}", target.base_url()));
    let out = run(cmd, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(104), "{stderr}");
    assert!(stderr.contains("vusPerRun"), "{stderr}");
}

#[test]
fn the_api_keeps_tenants_apart_and_refuses_what_is_not_a_component() {
    let target = server();
    let service = Service::start("api");
    let egress = allow(port_of(&target.base_url()));
    let (a_id, a) = service.tenant("a", json!({}), egress.clone());
    let (_, b) = service.tenant("b", json!({}), egress);

    // Who may call what.
    assert_eq!(service.call("GET", "/v1/runs", None, None).0, 401);
    assert_eq!(
        service.call("GET", "/v1/runs", Some("wl_wrong"), None).0,
        401
    );
    assert_eq!(service.call("GET", "/v1/tenants", Some(&a), None).0, 403);
    assert_eq!(
        service
            .call("GET", "/v1/tenants", Some(&service.admin), None)
            .0,
        200
    );
    assert_eq!(service.call("GET", "/healthz", None, None).0, 200);
    let (status, doc) = service.call("GET", "/openapi.json", None, None);
    assert_eq!((status, doc["openapi"].as_str()), (200, Some("3.0.3")));
    let (status, dup) = service.call(
        "POST",
        "/v1/tenants",
        Some(&service.admin),
        Some(br#"{"name": "a"}"#),
    );
    assert_eq!(status, 409, "{dup}");
    let (status, bad) = service.call(
        "PATCH",
        &format!("/v1/tenants/{a_id}"),
        Some(&service.admin),
        Some(br#"{"quotas": {"cpuPerCallMs": 1}}"#),
    );
    assert_eq!(status, 400, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cpuPerCallMs"),
        "{bad}"
    );

    // Uploads: components only, never native code.
    let hello = guest("hello");
    let cwasm = scratch("service-api-cwasm").join("hello.cwasm");
    let mut compile = wload();
    compile.arg("compile").arg(&hello).arg("-o").arg(&cwasm);
    assert!(run(compile, Duration::from_secs(120)).status.success());
    let cwasm_bytes = std::fs::read(&cwasm).unwrap();
    let (status, body) = service.raw(
        "POST",
        "/v1/tests",
        Some(&a),
        Some(&cwasm_bytes),
        "application/wasm",
    );
    assert_eq!(status, 415, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("native code"));
    let (status, _) = service.raw(
        "POST",
        "/v1/tests",
        Some(&a),
        Some(b"#!/bin/sh\n"),
        "application/wasm",
    );
    assert_eq!(status, 415);
    let test = service.upload(&a, &hello);
    let again = service.upload(&a, &hello);
    assert_eq!(test, again, "the same bytes are the same test");

    // A run, through plain HTTP, followed by its events.
    let (status, started) = service.start_run(
        &a,
        &test,
        json!({"vus": 2, "iterations": 10}),
        json!({"BASE_URL": target.base_url()}),
    );
    assert_eq!(status, 201, "{started}");
    let run_id = started["id"].as_str().unwrap().to_owned();
    let (status, events) = service.raw(
        "GET",
        &format!("/v1/runs/{run_id}/events"),
        Some(&a),
        None,
        "",
    );
    assert_eq!(status, 200);
    let events = String::from_utf8_lossy(&events);
    for name in [
        "event: run",
        "event: console",
        "event: interval",
        "event: end",
    ] {
        assert!(events.contains(name), "no {name} in {events}");
    }
    let ended = service.wait_run(&a, &run_id, Duration::from_secs(60));
    assert_eq!(
        (ended["status"].as_str(), ended["exitCode"].as_i64()),
        (Some("finished"), Some(0)),
        "{ended}"
    );
    let summary = service.summary(&a, &run_id);
    assert_eq!(metric(&summary, "iterations", "count"), 10.0);
    for file in ["summary.txt", "hdr", "intervals", "console"] {
        let (status, body) = service.raw(
            "GET",
            &format!("/v1/runs/{run_id}/{file}"),
            Some(&a),
            None,
            "",
        );
        assert!(status == 200 && !body.is_empty(), "{file}: {status}");
    }
    let (_, runs) = service.call("GET", "/v1/runs", Some(&a), None);
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);

    // B sees none of it: 404, exactly as for what does not exist.
    for path in [
        format!("/v1/runs/{run_id}"),
        format!("/v1/runs/{run_id}/summary"),
        format!("/v1/runs/{run_id}/events"),
        format!("/v1/tests/{test}"),
        "/v1/runs/r_000000000000000000000000".to_owned(),
    ] {
        let (status, v) = service.call("GET", &path, Some(&b), None);
        assert_eq!(status, 404, "{path}: {v}");
    }
    let (status, _) = service.patch_status(&b, &run_id, br#"{"stopped": true}"#);
    assert_eq!(status, 404);
    let (status, _) = service.call("DELETE", &format!("/v1/tests/{test}"), Some(&b), None);
    assert_eq!(status, 404);
    let (_, runs) = service.call("GET", "/v1/runs", Some(&b), None);
    assert!(runs["runs"].as_array().unwrap().is_empty());
    let (status, _) = service.start_run(&b, &test, json!({}), json!({}));
    assert_eq!(status, 404, "B cannot run A's test without uploading it");
}

/// Start a run, wait for its end, return `(record, summary, console)`.
fn finished_run(
    service: &Service,
    token: &str,
    test: &str,
    options: Value,
    env: Value,
) -> (Value, Value, String) {
    let (status, started) = service.start_run(token, test, options, env);
    assert_eq!(status, 201, "{started}");
    let id = started["id"].as_str().unwrap().to_owned();
    let record = service.wait_run(token, &id, Duration::from_secs(120));
    let summary = service.summary(token, &id);
    let (_, console) = service.raw(
        "GET",
        &format!("/v1/runs/{id}/console"),
        Some(token),
        None,
        "",
    );
    (
        record,
        summary,
        String::from_utf8_lossy(&console).into_owned(),
    )
}

/// `requestsPerSecond` bounds the tenant, not each run: two runs of one
/// tenant going at once share its 20 a second evenly. Both start paused
/// and are resumed together, so that they overlap for their whole 4 s:
/// about 40 requests each (one run alone would pace to 20 a second).
#[test]
fn two_runs_of_one_tenant_share_its_request_rate() {
    let target = server();
    let service = Service::start("rate-share");
    let quotas = json!({"concurrentRuns": 2, "requestsPerSecond": 20});
    let (_, token) = service.tenant("rs", quotas, allow(port_of(&target.base_url())));
    let hello = service.upload(&token, &guest("hello"));
    let options = json!({"scenarios": {"s": {"executor": "constant-vus", "vus": 3, "duration": "4s", "gracefulStop": "1s"}}});
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let body = json!({"test": hello, "options": options, "env": {"BASE_URL": target.base_url()}, "paused": true});
            let (status, run) = service.call(
                "POST",
                "/v1/runs",
                Some(&token),
                Some(body.to_string().as_bytes()),
            );
            assert_eq!(status, 201, "{run}");
            run["id"].as_str().unwrap().to_owned()
        })
        .collect();
    for id in &ids {
        let (status, resumed) = service.patch_status(&token, id, br#"{"paused": false}"#);
        assert_eq!(status, 200, "{resumed}");
    }
    let mut each = Vec::new();
    for id in &ids {
        let record = service.wait_run(&token, id, Duration::from_secs(60));
        assert_eq!(record["exitCode"], 0, "{record}");
        each.push(metric(&service.summary(&token, id), "http_reqs", "count") as u64);
    }
    let sent = target.stats.requests();
    assert_eq!(each.iter().sum::<u64>(), sent, "{each:?}");
    // 4 s at 20 a second for both together, and the slots claimed when
    // the first run ends and the other gets the whole rate (sent within
    // the gracefulStop); a rate per run would send about 160.
    assert!((50..=100).contains(&sent), "{each:?}: {sent} requests");
    for n in &each {
        assert!((20..=60).contains(n), "an even split: {each:?}");
    }
}

/// `--tenants FILE`: tenants declared in a file, with the SHA-256 of
/// their tokens, are there when the service starts, and a changed file
/// changes them at the next start (the same tenant, its tests kept); a
/// file with problems stops the start and names each one.
#[test]
fn a_tenants_file_provisions_tenants_at_every_start() {
    let target = server();
    let data = scratch("service-provision");
    let token = "wl_provisioned-token-for-tests";
    let sha = {
        let out = Command::new("sha256sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                c.stdin.take().expect("stdin").write_all(token.as_bytes())?;
                c.wait_with_output()
            })
            .expect("run sha256sum, as the docs say to");
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_owned()
    };
    let file = data.join("tenants.json");
    let declare = |vus: u32| {
        let tenants = json!({"tenants": [{
            "name": "provisioned",
            "quotas": {"vusPerRun": vus},
            "egress": allow(port_of(&target.base_url())),
            "tokenSha256": [sha],
        }]});
        std::fs::write(&file, tenants.to_string()).expect("write the tenants file");
    };
    let flags = ["--tenants", file.to_str().expect("a UTF-8 path")];
    let env = json!({"BASE_URL": target.base_url()});

    declare(2);
    let service = Service::start_with(data.clone(), &flags);
    let hello = service.upload(token, &guest("hello"));
    let (status, limit, _) = refused(&service, token, &hello, json!({"vus": 3, "iterations": 3}));
    assert_eq!((status, limit.as_str()), (422, "vusPerRun"));
    let (record, _, _) = finished_run(
        &service,
        token,
        &hello,
        json!({"vus": 2, "iterations": 2}),
        env.clone(),
    );
    assert_eq!(record["exitCode"], 0, "{record}");
    let (_, log) = service.terminate();
    assert!(log.contains("1 tenant(s) created"), "{log}");

    declare(3);
    let service = Service::start_with(data.clone(), &flags);
    assert!(
        service.log().contains("0 tenant(s) created, 1 updated"),
        "{}",
        service.log()
    );
    let (status, tests) = service.call("GET", "/v1/tests", Some(token), None);
    assert_eq!(status, 200, "{tests}");
    assert!(
        tests.to_string().contains(&hello),
        "the same tenant: {tests}"
    );
    let (record, _, _) = finished_run(
        &service,
        token,
        &hello,
        json!({"vus": 3, "iterations": 3}),
        env,
    );
    assert_eq!(record["exitCode"], 0, "{record}");
    drop(service);

    std::fs::write(
        &file,
        json!({"tenants": [{"name": "open", "egress": {"blockHostnames": ["x.test"]}}, {"name": "q", "egress": {"allow": []}, "quotas": {"concurrentRuns": 0}}]}).to_string(),
    )
    .expect("write the tenants file");
    let mut cmd = wload();
    cmd.arg("serve")
        .args(["--listen", "127.0.0.1:0", "--data"])
        .arg(data.join("state"))
        .args(flags);
    let out = run(cmd, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("tenant \"open\": egress.allow is needed")
            && err.contains("tenant \"q\": concurrentRuns must be at least 1"),
        "{err}"
    );
}

fn refused(service: &Service, token: &str, test: &str, options: Value) -> (u16, String, String) {
    let (status, v) = service.start_run(
        token,
        test,
        options,
        json!({"BASE_URL": "http://127.0.0.1:9"}),
    );
    (
        status,
        v["error"]["limit"].as_str().unwrap_or("").to_owned(),
        v["error"]["message"].as_str().unwrap_or("").to_owned(),
    )
}

#[test]
fn quotas_refuse_a_run_before_its_first_request_and_bound_it_while_it_goes() {
    let target = server();
    let service = Service::start("quotas");
    let quotas = json!({
        "vusPerRun": 3, "durationPerRun": 20, "vuHoursPerPeriod": 0.01,
        "concurrentRuns": 1, "requestsPerSecond": 20,
        "memoryPerVu": 16 << 20, "cpuPerCallMs": 200,
    });
    let (_, token) = service.tenant("q", quotas, allow(port_of(&target.base_url())));
    let hello = service.upload(&token, &guest("hello"));
    let faults = service.upload(&token, &guest("faults"));

    // The shape of the run, refused before setup: nothing reaches the target.
    let (status, limit, message) =
        refused(&service, &token, &hello, json!({"vus": 4, "iterations": 4}));
    assert_eq!((status, limit.as_str()), (422, "vusPerRun"), "{message}");
    assert!(
        message.contains("4 VUs") && message.contains("limit is 3"),
        "{message}"
    );
    let (status, limit, message) = refused(
        &service,
        &token,
        &hello,
        json!({"vus": 1, "duration": "30s"}),
    );
    assert_eq!(
        (status, limit.as_str()),
        (422, "durationPerRun"),
        "{message}"
    );
    // 0.01 VU-hours is 36 VU-seconds: 3 VUs for 5 s plus 10 s of
    // gracefulStop may take 45.
    let (status, limit, message) = refused(
        &service,
        &token,
        &hello,
        json!({"scenarios": {"s": {"executor": "constant-vus", "vus": 3, "duration": "5s", "gracefulStop": "10s"}}}),
    );
    assert_eq!(
        (status, limit.as_str()),
        (422, "vuHoursPerPeriod"),
        "{message}"
    );
    assert_eq!(target.stats.requests(), 0, "a refused run sent requests");

    // One run at a time: a second while the first waits paused.
    let body = json!({"test": hello, "options": {"scenarios": {"s": {"executor": "constant-vus", "vus": 1, "duration": "5s", "gracefulStop": "1s"}}}, "env": {"BASE_URL": target.base_url()}, "paused": true});
    let (status, first) = service.call(
        "POST",
        "/v1/runs",
        Some(&token),
        Some(body.to_string().as_bytes()),
    );
    assert_eq!(status, 201, "{first}");
    let first_id = first["id"].as_str().unwrap().to_owned();
    let (status, limit, _) = refused(&service, &token, &hello, json!({"vus": 1, "iterations": 1}));
    assert_eq!((status, limit.as_str()), (429, "concurrentRuns"));
    let (status, stopped) = service.patch_status(&token, &first_id, br#"{"stopped": true}"#);
    assert_eq!(status, 200, "{stopped}");
    let ended = service.wait_run(&token, &first_id, Duration::from_secs(60));
    assert_eq!(ended["status"], "stopped", "{ended}");

    // The request rate: 20/s over 2 s, where hello alone does thousands.
    let before = target.stats.requests();
    let (record, summary, _) = finished_run(
        &service,
        &token,
        &hello,
        json!({"scenarios": {"s": {"executor": "constant-vus", "vus": 3, "duration": "2s", "gracefulStop": "1s"}}}),
        json!({"BASE_URL": target.base_url()}),
    );
    assert_eq!(record["exitCode"], 0, "{record}");
    let sent = target.stats.requests() - before;
    assert!((20..=65).contains(&sent), "{sent} requests in 2 s at 20/s");
    assert_eq!(metric(&summary, "http_reqs", "count") as u64, sent);

    // Memory per VU and CPU per guest call: the iterations fail, the run ends.
    for (fault, said) in [("memory", "limit of 16 MiB"), ("loop", "was stopped")] {
        let (record, summary, console) = finished_run(
            &service,
            &token,
            &faults,
            json!({"scenarios": {"s": {"executor": "per-vu-iterations", "vus": 1, "iterations": 2, "maxDuration": "10s", "gracefulStop": "1s"}}}),
            json!({"BASE_URL": target.base_url(), "FAULT": fault}),
        );
        assert_eq!(record["status"], "finished", "{record}");
        assert_eq!(
            metric(&summary, "iterations_failed", "count"),
            2.0,
            "{fault}: {summary:#}"
        );
        assert!(console.contains(said), "{fault}: {console}");
    }
}

#[test]
fn the_egress_policy_lets_a_run_reach_only_what_its_tenant_allows() {
    let target = server();
    let denied = Counter::start();
    let service = Service::start("egress");
    let (_, token) = service.tenant("e", json!({}), allow(port_of(&target.base_url())));
    let hello = service.upload(&token, &guest("hello"));

    let (record, summary, _) = finished_run(
        &service,
        &token,
        &hello,
        json!({"vus": 1, "iterations": 3}),
        json!({"BASE_URL": format!("http://127.0.0.1:{}", denied.port)}),
    );
    assert_eq!(record["status"], "finished", "{record}");
    assert_eq!(metric(&summary, "http_reqs", "count"), 3.0, "{summary:#}");
    assert_eq!(
        metric(&summary, "http_req_failed", "passes"),
        3.0,
        "{summary:#}"
    );
    assert_eq!(
        denied.accepted.load(Ordering::SeqCst),
        0,
        "a denied port saw a connection"
    );
    // The same test reaches the allowed port.
    let (_, summary, _) = finished_run(
        &service,
        &token,
        &hello,
        json!({"vus": 1, "iterations": 3}),
        json!({"BASE_URL": target.base_url()}),
    );
    assert_eq!(
        metric(&summary, "http_req_failed", "passes"),
        0.0,
        "{summary:#}"
    );
    assert_eq!(target.stats.requests(), 3);
    // Redirect hops are checked on the same dial path: the engine's
    // tests/egress.rs follows one from an allowed port to a refused one.
}

/// A server on 127.0.0.1 that answers every request with an endless
/// chunked body (the hostile-input suite's first server).
fn endless_body_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    match stream.read(&mut byte) {
                        Ok(0) | Err(_) => return,
                        Ok(_) => head.push(byte[0]),
                    }
                }
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n");
                let chunk = [b'x'; 65536];
                let mut piece = format!("{:x}\r\n", chunk.len()).into_bytes();
                piece.extend_from_slice(&chunk);
                piece.extend_from_slice(b"\r\n");
                while stream.write_all(&piece).is_ok() {}
            });
        }
    });
    port
}

#[test]
fn one_tenants_runaway_runs_leave_anothers_run_whole() {
    let target = server();
    let hostile = endless_body_server();
    let service = Service::start("isolation");
    let egress = json!({"allow": [format!("127.0.0.1:{}", port_of(&target.base_url())), format!("127.0.0.1:{hostile}")]});
    let (_, a) = service.tenant(
        "noisy",
        json!({"concurrentRuns": 3, "cpuPerCallMs": 200, "memoryPerVu": 32 << 20}),
        egress.clone(),
    );
    let (_, b) = service.tenant("quiet", json!({}), egress);
    let faults = service.upload(&a, &guest("faults"));
    let hello_a = service.upload(&a, &guest("hello"));
    let hello_b = service.upload(&b, &guest("hello"));
    let base = target.base_url();
    let noisy = [
        (faults.as_str(), json!({"BASE_URL": base, "FAULT": "loop"})),
        (
            faults.as_str(),
            json!({"BASE_URL": base, "FAULT": "memory"}),
        ),
        (
            hello_a.as_str(),
            json!({"BASE_URL": format!("http://127.0.0.1:{hostile}")}),
        ),
    ];
    let mut noisy_ids = Vec::new();
    for (test, env) in noisy {
        let (status, v) = service.start_run(
            &a,
            test,
            json!({"vus": 2, "duration": "4s", "gracefulStop": "2s"}),
            env,
        );
        assert_eq!(status, 201, "{v}");
        noisy_ids.push(v["id"].as_str().unwrap().to_owned());
    }
    // B's run goes while all three do: 2 VUs × 150 iterations, 10 ms apart.
    let (record, summary, _) = finished_run(
        &service,
        &b,
        &hello_b,
        json!({"scenarios": {"quiet": {"executor": "per-vu-iterations", "vus": 2, "iterations": 150, "maxDuration": "60s"}}}),
        json!({"BASE_URL": base, "SLEEP_MS": "10"}),
    );
    assert!(
        !service.killed_by_watchdog.load(Ordering::Relaxed),
        "the service passed the RSS bound"
    );
    assert_eq!(
        (record["status"].as_str(), record["exitCode"].as_i64()),
        (Some("finished"), Some(0)),
        "{record}"
    );
    let m = &summary["metrics"];
    assert_eq!(
        metric(&summary, "iterations", "count"),
        300.0,
        "{summary:#}"
    );
    assert_eq!(metric(&summary, "http_reqs", "count"), 300.0, "{summary:#}");
    assert_eq!(
        metric(&summary, "http_req_failed", "passes"),
        0.0,
        "{summary:#}"
    );
    assert!(
        m.get("iterations_failed")
            .is_none_or(|f| f["count"].as_f64() == Some(0.0)),
        "{summary:#}"
    );
    assert_eq!(metric(&summary, "checks", "fails"), 0.0, "{summary:#}");
    // B's results are B's only: none of A's failures, no other check.
    let checks = summary["root_group"]["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 1, "{checks:?}");
    for id in &noisy_ids {
        let ended = service.wait_run(&a, id, Duration::from_secs(120));
        assert_eq!(ended["status"], "finished", "{ended}");
    }
    let hostile_summary = service.summary(&a, &noisy_ids[2]);
    assert!(
        metric(&hostile_summary, "http_req_failed", "passes") > 0.0,
        "the endless bodies did not fail: {hostile_summary:#}"
    );
}

#[test]
fn finished_runs_survive_a_kill_9_and_the_run_it_cut_is_marked_interrupted() {
    let target = server();
    let service = Service::start("recovery");
    let (_, token) = service.tenant("r", json!({}), allow(port_of(&target.base_url())));
    let hello = service.upload(&token, &guest("hello"));
    let (done, summary, _) = finished_run(
        &service,
        &token,
        &hello,
        json!({"vus": 1, "iterations": 5}),
        json!({"BASE_URL": target.base_url()}),
    );
    let done_id = done["id"].as_str().unwrap().to_owned();
    // A run that waits, paused, until the service is killed under it.
    let body = json!({"test": hello, "options": {"vus": 1, "duration": "30s"}, "env": {"BASE_URL": target.base_url()}, "paused": true});
    let (status, cut) = service.call(
        "POST",
        "/v1/runs",
        Some(&token),
        Some(body.to_string().as_bytes()),
    );
    assert_eq!(status, 201, "{cut}");
    let cut_id = cut["id"].as_str().unwrap().to_owned();
    let workers = service.workers();
    assert_eq!(workers.len(), 1, "one worker for the paused run");
    let data = service.kill9();
    // The worker dies with the service (PR_SET_PDEATHSIG).
    let started = Instant::now();
    while Path::new(&format!("/proc/{}", workers[0])).exists()
        && std::fs::read_to_string(format!("/proc/{}/stat", workers[0]))
            .is_ok_and(|s| !s.contains(") Z "))
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the worker outlived the service"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let service = Service::start_on(data);
    assert!(
        service.log().contains("marked interrupted"),
        "{}",
        service.log()
    );
    let (_, cut) = service.call("GET", &format!("/v1/runs/{cut_id}"), Some(&token), None);
    assert_eq!(cut["status"], "interrupted", "{cut}");
    let (_, done) = service.call("GET", &format!("/v1/runs/{done_id}"), Some(&token), None);
    assert_eq!(
        (done["status"].as_str(), done["exitCode"].as_i64()),
        (Some("finished"), Some(0)),
        "{done}"
    );
    assert_eq!(service.summary(&token, &done_id), summary);
    // And the service goes on: a new run of the kept test.
    let (record, _, _) = finished_run(
        &service,
        &token,
        &hello,
        json!({"vus": 1, "iterations": 2}),
        json!({"BASE_URL": target.base_url()}),
    );
    assert_eq!(record["exitCode"], 0, "{record}");
    // SIGTERM: the service stops and says so.
    let (code, log) = service.terminate();
    assert_eq!(code, Some(0), "{log}");
}

#[test]
fn a_run_is_paused_resumed_scaled_and_stopped_as_with_k6s_status_api() {
    let target = server();
    let service = Service::start("control");
    let (_, token) = service.tenant("c", json!({}), allow(port_of(&target.base_url())));
    let hello = service.upload(&token, &guest("hello"));
    let env = json!({"BASE_URL": target.base_url(), "SLEEP_MS": "20"});
    let (status, run) = service.start_run(
        &token,
        &hello,
        json!({"scenarios": {"ext": {"executor": "externally-controlled", "vus": 1, "maxVUs": 4, "duration": "60s"}}}),
        env.clone(),
    );
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_owned();
    let patch = |body: &str| service.patch_status(&token, &id, body.as_bytes());
    let (status, s) = patch(r#"{"vus": 3}"#);
    assert_eq!((status, s["vus"].as_u64()), (200, Some(3)), "{s}");
    let (_, s) = service.call("GET", &format!("/v1/runs/{id}/status"), Some(&token), None);
    assert_eq!(
        (s["vus"].as_u64(), s["vus-max"].as_u64()),
        (Some(3), Some(4)),
        "{s}"
    );
    let (status, s) = patch(r#"{"vus": 10}"#);
    assert_eq!(status, 422, "more VUs than vus-max: {s}");
    let (status, s) = patch(r#"{"vus-max": 4, "vus": 4}"#);
    assert_eq!((status, s["vus"].as_u64()), (200, Some(4)), "{s}");
    // wload initialises every VU before the start: vus-max cannot grow.
    let (status, s) = patch(r#"{"vus-max": 6}"#);
    assert_eq!(status, 422, "{s}");

    // Paused: no new iteration starts, then they go on.
    let (status, s) = patch(r#"{"paused": true}"#);
    assert_eq!((status, s["paused"].as_bool()), (200, Some(true)), "{s}");
    std::thread::sleep(Duration::from_millis(300));
    let held = target.stats.requests();
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        target.stats.requests(),
        held,
        "requests went on while paused"
    );
    let (status, s) = patch(r#"{"paused": false}"#);
    assert_eq!((status, s["paused"].as_bool()), (200, Some(false)), "{s}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(target.stats.requests() > held, "the run did not resume");

    let (status, s) = patch(r#"{"stopped": true}"#);
    assert_eq!(status, 200, "{s}");
    let ended = service.wait_run(&token, &id, Duration::from_secs(60));
    assert_eq!(ended["status"], "stopped", "{ended}");
    let (status, _) = patch(r#"{"paused": true}"#);
    assert_eq!(status, 409, "an ended run cannot change");

    // Other executors cannot be paused once started, as in k6.
    let (status, run) = service.start_run(
        &token,
        &hello,
        json!({"scenarios": {"s": {"executor": "constant-vus", "vus": 1, "duration": "20s", "gracefulStop": "1s"}}}),
        env,
    );
    assert_eq!(status, 201, "{run}");
    let id = run["id"].as_str().unwrap().to_owned();
    let (status, s) = service.patch_status(&token, &id, br#"{"paused": true}"#);
    assert_eq!(status, 422, "{s}");
    assert!(
        s["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("pause"),
        "{s}"
    );
    service.patch_status(&token, &id, br#"{"stopped": true}"#);
    let ended = service.wait_run(&token, &id, Duration::from_secs(60));
    assert_eq!(ended["status"], "stopped", "{ended}");
}

#[test]
fn a_tenant_policy_without_an_allowlist_is_refused() {
    let service = Service::start("egress-required");
    for egress in [r#"{}"#, r#"{"allow": null}"#] {
        let body = format!(r#"{{"name": "open", "egress": {egress}}}"#);
        let (status, v) = service.call(
            "POST",
            "/v1/tenants",
            Some(&service.admin),
            Some(body.as_bytes()),
        );
        assert_eq!(status, 400, "{egress}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("egress.allow"),
            "{v}"
        );
    }
    let (id, _) = service.tenant("closed", json!({}), json!({"allow": ["*"]}));
    let (status, v) = service.call(
        "PATCH",
        &format!("/v1/tenants/{id}"),
        Some(&service.admin),
        Some(br#"{"egress": {"blockHostnames": ["*.internal"]}}"#),
    );
    assert_eq!(status, 400, "{v}");
}

#[test]
fn a_run_paused_for_ever_is_stopped_past_its_wall_time() {
    let target = server();
    let service = Service::start_with(scratch("service-wall"), &["--run-wall-margin", "2s"]);
    let (_, token) = service.tenant(
        "w",
        json!({"durationPerRun": 2}),
        allow(port_of(&target.base_url())),
    );
    let hello = service.upload(&token, &guest("hello"));
    let body = json!({"test": hello, "paused": true, "env": {"BASE_URL": target.base_url()},
        "options": {"scenarios": {"s": {"executor": "constant-vus", "vus": 1, "duration": "1s", "gracefulStop": "1s"}}}});
    let (status, run) = service.call(
        "POST",
        "/v1/runs",
        Some(&token),
        Some(body.to_string().as_bytes()),
    );
    assert_eq!(status, 201, "{run}");
    let started = Instant::now();
    let ended = service.wait_run(&token, run["id"].as_str().unwrap(), Duration::from_secs(60));
    assert_eq!(ended["status"], "stopped", "{ended}");
    assert!(
        ended["message"]
            .as_str()
            .unwrap_or("")
            .contains("stopped by the service"),
        "{ended}"
    );
    // 2 s of quota and 2 s of margin, then a stop.
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(target.stats.requests(), 0, "a paused run sent requests");
}
