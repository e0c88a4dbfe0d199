//! `--out prometheus-rw` and `--out influxdb` against the real servers:
//! Debian's Prometheus (remote-write receiver and native histograms on)
//! and InfluxDB 1.x, installed by the test and started on free loopback
//! ports with their data in scratch. After a run, what their query APIs
//! return equals the run's summary export; an endpoint that is down is
//! reported once and the run still succeeds.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::service::http;
use crate::support::{
    Daemon, Finished, debian_packages, free_port, guest, run, scratch, server, wload,
};

const LIMIT: Duration = Duration::from_secs(120);

/// Percent-encoding of a query parameter.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// GET `path` from `addr` as JSON.
fn get_json(addr: &str, path: &str) -> Value {
    let (status, body) = http(addr, "GET", path, None, None, "");
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "GET {path}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("GET {path}: {e}: {text}"))
}

/// `hello` against a fresh target server with `args` and `env`, exiting 0.
fn run_hello(name: &str, args: &[&str], env: &[(&str, &str)]) -> Finished {
    let target = server();
    let export = scratch(name).join("summary.json");
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("hello"))
        .args(["--vus", "2", "--duration", "2s", "--out-interval", "200ms"])
        .args(args)
        .arg("-e")
        .arg(format!("BASE_URL={}", target.base_url()))
        .arg("--summary-export")
        .arg(&export)
        .arg("--quiet");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = run(cmd, LIMIT);
    let summary = std::fs::read_to_string(&export)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    let finished = Finished { output, summary };
    assert_eq!(finished.code(), Some(0), "{}", finished.stderr());
    assert!(
        !finished.stderr().contains("WARN"),
        "every push went through: {}",
        finished.stderr()
    );
    finished
}

fn close(got: f64, want: f64, what: &str) {
    assert!(
        (got - want).abs() <= 1e-9 + want.abs() * 1e-6,
        "{what}: {got} (queried) != {want} (summary)"
    );
}

/// Wait until the server at `addr` listens, then answers `path` with
/// `status`.
fn ready(daemon: &mut Daemon, addr: &str, path: &str, status: u16) {
    daemon.wait_until(Duration::from_secs(60), || {
        std::net::TcpStream::connect(addr).is_ok()
    });
    daemon.wait_until(Duration::from_secs(60), || {
        http(addr, "GET", path, None, None, "").0 == status
    });
}

/// Prometheus on a free loopback port, data in `dir`.
fn prometheus(dir: &std::path::Path) -> (Daemon, String) {
    debian_packages(&["prometheus"]);
    let config = dir.join("prometheus.yml");
    // No scrape targets: it only receives.
    std::fs::write(&config, "global:\n  scrape_interval: 1h\n").expect("write prometheus.yml");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut cmd = Command::new("prometheus");
    cmd.arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .arg("--web.enable-remote-write-receiver")
        .arg("--enable-feature=native-histograms");
    let mut daemon = Daemon::start(cmd, dir.join("prometheus.log"));
    ready(&mut daemon, &addr, "/-/ready", 200);
    (daemon, addr)
}

/// The value of a PromQL query that returns one series (`None`: none),
/// evaluated now or at `time` (Unix seconds).
fn promql_at(addr: &str, query: &str, time: Option<f64>) -> Option<f64> {
    let at = time.map(|t| format!("&time={t}")).unwrap_or_default();
    let v = get_json(addr, &format!("/api/v1/query?query={}{at}", encode(query)));
    let result = v["data"]["result"].as_array().expect("a result vector");
    assert!(result.len() <= 1, "{query}: {result:#?}");
    result.first().map(|r| {
        r["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{query}: {r}"))
    })
}

fn promql(addr: &str, query: &str) -> Option<f64> {
    promql_at(addr, query, None)
}

/// The time of the newest sample (float or histogram) of `selector`'s
/// series over the last 10 minutes.
fn newest_sample(addr: &str, selector: &str) -> f64 {
    let query = format!("{selector}[10m]");
    let v = get_json(addr, &format!("/api/v1/query?query={}", encode(&query)));
    v["data"]["result"]
        .as_array()
        .expect("a result matrix")
        .iter()
        .flat_map(|series| {
            ["values", "histograms"]
                .into_iter()
                .filter_map(|k| series[k].as_array())
                .flatten()
                .filter_map(|point| point[0].as_f64())
        })
        .fold(None, |a: Option<f64>, t| Some(a.map_or(t, |a| a.max(t))))
        .unwrap_or_else(|| panic!("{query}: no samples: {v}"))
}

#[test]
fn prometheus_remote_write_totals_equal_the_summary() {
    let dir = scratch("remote-prometheus");
    let (prom, addr) = prometheus(&dir);
    let url = format!("prometheus-rw=http://{addr}/api/v1/write");

    // Trends as native histograms, series marked stale at the end.
    let run = run_hello(
        "remote-prometheus-native",
        &["--out", &url, "--tag", "testid=native"],
        &[
            ("WLOAD_PROMETHEUS_RW_PUSH_INTERVAL", "500ms"),
            ("WLOAD_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM", "true"),
            ("WLOAD_PROMETHEUS_RW_STALE_MARKERS", "true"),
        ],
    );
    let reqs = run.metric("http_reqs", "count");
    assert!(reqs > 0.0);
    let q = |query: &str| {
        promql(&addr, query).unwrap_or_else(|| panic!("{query}: no series\n{}", prom.log()))
    };
    // The stale markers ended every series: an instant query finds none,
    // a range over the run finds the last totals.
    assert_eq!(
        promql(&addr, r#"k6_http_reqs_total{testid="native"}"#),
        None
    );
    close(
        q(r#"sum(max_over_time(k6_http_reqs_total{testid="native"}[10m]))"#),
        reqs,
        "k6_http_reqs_total",
    );
    close(
        q(r#"sum(max_over_time(k6_iterations_total{testid="native"}[10m]))"#),
        run.metric("iterations", "count"),
        "k6_iterations_total",
    );
    close(
        q(r#"max_over_time(k6_checks_rate{testid="native",check="status is 200"}[10m])"#),
        run.metric("checks", "value"),
        "k6_checks_rate",
    );
    // The trend, one native histogram per series: its count is the
    // number of requests, its sum their durations (seconds). Prometheus
    // 2.42's range functions skip histograms: these are evaluated at
    // the last push, before the stale markers.
    let selector = r#"k6_http_req_duration_seconds{testid="native"}"#;
    let last = newest_sample(&addr, selector);
    let at = |query: String| {
        promql_at(&addr, &query, Some(last))
            .unwrap_or_else(|| panic!("{query} at {last}: no series\n{}", prom.log()))
    };
    let hist = format!("sum({selector})");
    close(
        at(format!("histogram_count({hist})")),
        reqs,
        "histogram_count",
    );
    close(
        at(format!("histogram_sum({hist})")),
        run.metric("http_req_duration", "avg") * reqs / 1e3,
        "histogram_sum",
    );
    // Its buckets are 9% wide: the median is within a bucket of the
    // summary's.
    let med = at(format!("histogram_quantile(0.5, {hist})")) * 1e3;
    let want = run.metric("http_req_duration", "med");
    assert!(
        (med - want).abs() <= want * 0.1,
        "histogram_quantile(0.5): {med} ms, summary med {want} ms"
    );

    // Trends as chosen statistics, in seconds, without stale markers:
    // the last samples are the run's totals.
    let run = run_hello(
        "remote-prometheus-stats",
        &["--out", &url, "--tag", "testid=stats"],
        &[
            ("WLOAD_PROMETHEUS_RW_PUSH_INTERVAL", "500ms"),
            ("WLOAD_PROMETHEUS_RW_TREND_STATS", "count,max,p(95)"),
        ],
    );
    let reqs = run.metric("http_reqs", "count");
    close(
        q(r#"sum(k6_http_reqs_total{testid="stats"})"#),
        reqs,
        "k6_http_reqs_total",
    );
    close(
        q(r#"sum(k6_http_req_duration_count{testid="stats"})"#),
        reqs,
        "k6_http_req_duration_count",
    );
    // hello's requests are all one series: its statistics are the
    // summary's.
    close(
        q(r#"k6_http_req_duration_max{testid="stats"}"#) * 1e3,
        run.metric("http_req_duration", "max"),
        "k6_http_req_duration_max",
    );
    close(
        q(r#"k6_http_req_duration_p95{testid="stats"}"#) * 1e3,
        run.metric("http_req_duration", "p(95)"),
        "k6_http_req_duration_p95",
    );
}

/// InfluxDB on free loopback ports (HTTP and its RPC port), data in `dir`.
fn influxdb(dir: &std::path::Path) -> (Daemon, String) {
    debian_packages(&["influxdb"]);
    let http_addr = format!("127.0.0.1:{}", free_port());
    let rpc_addr = format!("127.0.0.1:{}", free_port());
    let d = dir.display();
    let config = format!(
        "reporting-enabled = false\n\
         bind-address = \"{rpc_addr}\"\n\
         [meta]\n  dir = \"{d}/meta\"\n\
         [data]\n  dir = \"{d}/data\"\n  wal-dir = \"{d}/wal\"\n  query-log-enabled = false\n\
         [monitor]\n  store-enabled = false\n\
         [subscriber]\n  enabled = false\n\
         [http]\n  bind-address = \"{http_addr}\"\n  log-enabled = false\n  pprof-enabled = false\n\
         [ifql]\n  enabled = false\n"
    );
    let file = dir.join("influxdb.conf");
    std::fs::write(&file, config).expect("write influxdb.conf");
    let mut cmd = Command::new("influxd");
    cmd.arg("run").arg("-config").arg(&file);
    let mut daemon = Daemon::start(cmd, dir.join("influxdb.log"));
    ready(&mut daemon, &http_addr, "/ping", 204);
    (daemon, http_addr)
}

/// The single value of an InfluxQL query (`columns` after `time`).
fn influxql(addr: &str, db: &str, query: &str) -> Vec<f64> {
    let v = get_json(
        addr,
        &format!("/query?db={}&q={}", encode(db), encode(query)),
    );
    let row = &v["results"][0]["series"][0]["values"][0];
    row.as_array()
        .unwrap_or_else(|| panic!("{query}: {v}"))
        .iter()
        .skip(1)
        .map(|x| x.as_f64().unwrap_or_else(|| panic!("{query}: {v}")))
        .collect()
}

#[test]
fn influxdb_points_add_up_to_the_summary() {
    let dir = scratch("remote-influxdb");
    let (_influx, addr) = influxdb(&dir);
    // The database does not exist yet: the output creates it.
    let run = run_hello(
        "remote-influxdb-run",
        &["--out", &format!("influxdb=http://{addr}/wload_e2e")],
        &[("WLOAD_INFLUXDB_PUSH_INTERVAL", "500ms")],
    );
    let q = |query: &str| influxql(&addr, "wload_e2e", query);
    let reqs = run.metric("http_reqs", "count");
    assert!(reqs > 0.0);
    close(
        q(r#"SELECT sum("value") FROM "http_reqs""#)[0],
        reqs,
        "http_reqs",
    );
    close(
        q(r#"SELECT sum("value") FROM "iterations""#)[0],
        run.metric("iterations", "count"),
        "iterations",
    );
    let (passes, fails) = run.check("status is 200");
    let got =
        q(r#"SELECT sum("passes"), sum("fails") FROM "checks" WHERE "check" = 'status is 200'"#);
    assert_eq!(
        got,
        [passes as f64, fails as f64],
        "the check's passes and fails"
    );
    let trend = q(r#"SELECT sum("count"), sum("sum"), max("max") FROM "http_req_duration""#);
    close(trend[0], reqs, "http_req_duration count");
    close(
        trend[1],
        run.metric("http_req_duration", "avg") * reqs,
        "http_req_duration sum",
    );
    close(
        trend[2],
        run.metric("http_req_duration", "max"),
        "http_req_duration max",
    );
    // Tags are tags: one series per status (all 200 here).
    close(
        q(r#"SELECT sum("value") FROM "http_reqs" WHERE "status" = '200'"#)[0],
        reqs,
        "http_reqs{status=200}",
    );
}

#[test]
fn a_down_endpoint_is_reported_once_and_the_run_goes_on() {
    // Nothing listens on a port that was free a moment ago.
    let url = format!(
        "prometheus-rw=http://127.0.0.1:{}/api/v1/write",
        free_port()
    );
    let target = server();
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("hello"))
        .args(["--vus", "1", "--duration", "1s", "--out-interval", "100ms"])
        .args(["--out", &url, "--quiet"])
        .arg("-e")
        .arg(format!("BASE_URL={}", target.base_url()))
        .env("WLOAD_PROMETHEUS_RW_PUSH_INTERVAL", "200ms");
    let out = run(cmd, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("a push failed").count(),
        1,
        "reported once: {stderr}"
    );
    assert!(
        stderr.contains("pushes were not stored"),
        "the end says how many were lost: {stderr}"
    );
    assert!(target.stats.requests() > 0, "the load went on");

    // A misspelt setting is invalid options: the run stops before any
    // request.
    let target = server();
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("hello"))
        .args(["--vus", "1", "--duration", "1s", "--out", &url, "--quiet"])
        .arg("-e")
        .arg(format!("BASE_URL={}", target.base_url()))
        .env("WLOAD_PROMETHEUS_RW_PUSH_INTERVALL", "1s");
    let out = run(cmd, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(104), "{stderr}");
    assert!(
        stderr.contains("WLOAD_PROMETHEUS_RW_PUSH_INTERVALL is not a setting"),
        "{stderr}"
    );
    assert_eq!(target.stats.requests(), 0);
}

/// A bcrypt hash of `wload-e2e-secret` (cost 4, the least Prometheus
/// takes), made with Python's `crypt.crypt(…, crypt.mksalt(METHOD_BLOWFISH,
/// rounds=16))`: Prometheus' web config holds hashes, not passwords.
const PASSWORD_HASH: &str = "$2b$04$AXhekI1ngBtBjacUCrYHzeqMUeOVrjfbjtcMqAY5RZS3.Ho5C8uDi";

/// GET `path` over TLS (trusting `ca` only) with basic auth, as JSON.
fn get_tls_json(addr: &str, ca: &[u8], auth: &str, path: &str) -> Value {
    use rustls::pki_types::pem::PemObject as _;
    use std::io::{Read, Write};
    let mut roots = rustls::RootCertStore::empty();
    let der = rustls::pki_types::CertificateDer::from_pem_slice(ca).expect("the CA's PEM");
    roots.add(der).expect("trust the CA");
    let config = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("an IP name");
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name.to_owned())
        .expect("a TLS client");
    let sock = std::net::TcpStream::connect(addr).expect("connect to Prometheus");
    sock.set_read_timeout(Some(LIMIT)).expect("a read timeout");
    let mut tls = rustls::StreamOwned::new(conn, sock);
    write!(
        tls,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAuthorization: {auth}\r\n\r\n"
    )
    .expect("send the query");
    let mut raw = Vec::new();
    // Go closes without close_notify at times: what was read is whole.
    let _ = tls.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(head.starts_with("HTTP/1.0 200"), "GET {path}: {text}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

#[test]
fn prometheus_remote_write_over_tls_with_basic_auth() {
    debian_packages(&["prometheus"]);
    let dir = scratch("remote-prometheus-tls");
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()])
        .expect("generate a certificate");
    let (cert_file, key_file) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_file, cert.cert.pem()).expect("write the certificate");
    std::fs::write(&key_file, cert.signing_key.serialize_pem()).expect("write the key");
    let web = dir.join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: {}\n  key_file: {}\nbasic_auth_users:\n  wload: {PASSWORD_HASH}\n",
            cert_file.display(),
            key_file.display()
        ),
    )
    .expect("write web.yml");
    let config = dir.join("prometheus.yml");
    std::fs::write(&config, "global:\n  scrape_interval: 1h\n").expect("write prometheus.yml");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut cmd = Command::new("prometheus");
    cmd.arg(format!("--config.file={}", config.display()))
        .arg(format!("--web.config.file={}", web.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .arg("--web.enable-remote-write-receiver");
    let mut prom = Daemon::start(cmd, dir.join("prometheus.log"));
    prom.wait_until(Duration::from_secs(60), || {
        prom_ready(&dir.join("prometheus.log"))
    });

    let url = format!("prometheus-rw=https://{addr}/api/v1/write");
    let ca = cert_file.display().to_string();
    let pushed = run_hello(
        "remote-prometheus-tls-run",
        &["--out", &url, "--tag", "testid=tls"],
        &[
            ("WLOAD_PROMETHEUS_RW_PUSH_INTERVAL", "500ms"),
            ("WLOAD_PROMETHEUS_RW_USERNAME", "wload"),
            ("WLOAD_PROMETHEUS_RW_PASSWORD", "wload-e2e-secret"),
            ("WLOAD_PROMETHEUS_RW_CA_CERTIFICATE", &ca),
        ],
    );
    let query = encode(r#"sum(k6_http_reqs_total{testid="tls"})"#);
    let auth = "Basic d2xvYWQ6d2xvYWQtZTJlLXNlY3JldA=="; // wload:wload-e2e-secret
    let v = get_tls_json(
        &addr,
        cert.cert.pem().as_bytes(),
        auth,
        &format!("/api/v1/query?query={query}"),
    );
    let got: f64 = v["data"]["result"][0]["value"][1]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no k6_http_reqs_total: {v}\n{}", prom.log()));
    close(
        got,
        pushed.metric("http_reqs", "count"),
        "k6_http_reqs_total over TLS",
    );

    // A wrong password: Prometheus refuses every push, the run goes on.
    let target = server();
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("hello"))
        .args(["--vus", "1", "--duration", "1s", "--out-interval", "100ms"])
        .args(["--out", &url, "--quiet"])
        .arg("-e")
        .arg(format!("BASE_URL={}", target.base_url()))
        .env("WLOAD_PROMETHEUS_RW_PUSH_INTERVAL", "200ms")
        .env("WLOAD_PROMETHEUS_RW_USERNAME", "wload")
        .env("WLOAD_PROMETHEUS_RW_PASSWORD", "wrong")
        .env("WLOAD_PROMETHEUS_RW_CA_CERTIFICATE", &ca);
    let out = run(cmd, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("a push failed: HTTP 401").count(),
        1,
        "the refusal, reported once: {stderr}"
    );
    drop(prom);
}

/// Whether Prometheus' log says it serves.
fn prom_ready(log: &std::path::Path) -> bool {
    std::fs::read_to_string(log)
        .is_ok_and(|l| l.contains("Server is ready to receive web requests"))
}
