//! The command line: parses flags into [`RunOptions`], calls the library,
//! prints what comes back. Option precedence: flags > `WLOAD_*`
//! environment variables > the test's own `options()`.

mod build;
mod build_js;
mod build_py;
mod build_ts;
mod k8s;
mod plugin;
mod preinit;
mod remote;

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};

use serde_json::{Map, Value, json};

use crate::demo::HELLO_WASM;
use wload_engine::component::{Cache, FileKind, detect};
use wload_engine::config;
use wload_engine::executor::Segment;
use wload_engine::plugin::caps::{Grants, HostGrant};
use wload_engine::plugin::params::RawParam;
use wload_engine::run::{self, ExitError, RunOptions, TestSource, exit};
use wload_engine::sandbox::{EPOCH_TICK, Sandbox, SandboxLimits};
use wload_http::{ClientConfig, LocalIps, TlsOptions};
use wload_output::stream::OutSpec;
use wload_output::{export, merge, shard, summary};
use wload_report::{Collector, Dashboard};
use wload_target::TargetServer;
use wload_units::parse_duration;

#[derive(Debug, Parser)]
#[command(
    name = "wload",
    version,
    about = "HTTP load testing with tests written as WebAssembly components",
    long_about = "HTTP load testing with tests written as WebAssembly components.\n\n\
                  Write a test against the WIT world wload:test (Rust: the wload-sdk crate), build it \
                  for wasm32-wasip2 and run it: `wload run test.wasm --vus 100 --duration 30s`.\n\
                  Try `wload demo` for a complete load test against a built-in server."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a test or a scenario plugin (a .wasm component, or a .cwasm
    /// from `wload compile`); a plugin takes its parameters with -p. A
    /// JavaScript (.js, .mjs) or TypeScript (.ts, esbuild from npm) test
    /// is built into a component first, in-process, a Python (.py) test
    /// with Python; the build is cached.
    Run {
        /// The test (or plugin) file.
        test: PathBuf,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Scenario plugins (components of wload:scenario/plugin, run with
    /// `wload run PLUGIN.wasm -p NAME=VALUE`): `wload plugin info X.wasm`.
    Plugin {
        #[command(subcommand)]
        command: plugin::PluginCommand,
    },
    /// Build a JavaScript or Python test into a component (.wasm), as
    /// `wload run` does on the way to a run, to keep, ship or upload:
    /// `wload build script.js -o test.wasm`.
    Build {
        /// The script (.js, .mjs, .ts, .py).
        script: PathBuf,
        /// Where to write the component.
        #[arg(short, long)]
        output: PathBuf,
        /// A library plugin whose interface the script imports
        /// (`import { login } from 'wload:session/login@0.1.0'`); give the
        /// same plugin to `wload run --with` (repeatable).
        #[arg(long = "with", value_name = "PLUGIN.wasm")]
        with: Vec<PathBuf>,
    },
    /// Compile a test ahead of time into a .cwasm for this machine.
    Compile {
        /// The test component.
        test: PathBuf,
        /// Where to write the compiled test.
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Run the multi-tenant service: an API that takes tests from many
    /// tenants and runs each in a sandboxed worker process, with quotas
    /// and an egress policy per tenant (docs/server.md).
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8700")]
        listen: SocketAddr,
        /// Where the database, tests, compile cache and runs are kept.
        #[arg(long, default_value = "wload-data")]
        data: PathBuf,
        /// A file holding the admin token (which manages tenants).
        /// [env: WLOAD_ADMIN_TOKEN]
        #[arg(long, value_name = "FILE")]
        admin_token_file: Option<PathBuf>,
        /// Tenants declared in a JSON file (name, quotas, egress, token
        /// SHA-256s), created or updated at every start.
        #[arg(long, value_name = "FILE")]
        tenants: Option<PathBuf>,
        /// Largest test accepted, e.g. 128MiB.
        #[arg(long, default_value = "128MiB", value_parser = parse_size)]
        max_upload: u64,
        /// Wall time a run may take past its tenant's durationPerRun (for
        /// setup, teardown and pauses); then it is stopped.
        #[arg(long, default_value = "150s", value_parser = parse_duration)]
        run_wall_margin: Duration,
    },
    /// One run (or compile) of `wload serve`, started by the service.
    #[command(hide = true)]
    Worker {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run only the built-in target server on 127.0.0.1, to try tests
    /// against: GET /, /bytes/N, /status/N, /delay/MS, POST /echo.
    Target {
        /// Port to listen on.
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Stop after this long (default: until Ctrl-C).
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
    },
    /// Merge the results of the shards of a distributed run
    /// (`--shard-summary FILE`, with `--execution-segment`) into the one
    /// summary a single process would print, thresholds evaluated on the
    /// merged data (exit code 99 when one fails); or merge `--out
    /// hdr=FILE` interval logs into one summary per trend metric and tag
    /// set. Both are exact: histograms add without loss.
    Merge {
        /// The shard summaries, or the interval logs.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Also write the merged summary as JSON: the layout of `wload run
        /// --summary-export` (for interval logs, plus one entry per tag
        /// set).
        #[arg(long, value_name = "FILE")]
        summary_export: Option<PathBuf>,
        /// Statistics per trend (default: the shards' summaryTrendStats;
        /// for interval logs count,avg,min,med,max,p(90),p(95),p(99)).
        #[arg(long, value_name = "LIST", value_delimiter = ',')]
        summary_trend_stats: Vec<String>,
    },
    /// Run a test as N shards on Kubernetes: render the manifests, run a
    /// shard in a pod, collect the shards into one result
    /// (docs/distributed.md).
    K8s {
        #[command(subcommand)]
        command: k8s::K8s,
    },
    /// Write the HTML report of a finished run from what it saved: its
    /// --summary-export file or its --shard-summary files (the shards of
    /// a distributed run are merged, as `wload merge` does), plus its
    /// --out json files and --out hdr logs for the charts over time.
    Report {
        /// Where to write the report.
        #[arg(long, short, value_name = "FILE", default_value = "report.html")]
        out: PathBuf,
        /// The saved outputs.
        #[arg(required = true, value_name = "FILE")]
        inputs: Vec<PathBuf>,
    },
    /// Start a built-in target server on 127.0.0.1 and load it with the
    /// bundled example test (10 VUs for 10s unless told otherwise).
    Demo {
        #[command(flatten)]
        load: LoadArgs,
        /// Port of the built-in server (0: any free port).
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
}

/// Flags shared by `run` and `demo`.
#[derive(Debug, Args)]
struct LoadArgs {
    /// Run the test on a wload service (`wload serve`) instead of here:
    /// uploaded, run there, shown here as a local run.
    #[arg(long, value_name = "URL", env = "WLOAD_SERVER")]
    server: Option<String>,
    /// The tenant token for --server.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "WLOAD_TOKEN",
        hide_env_values = true
    )]
    token: Option<String>,
    /// Number of VUs (concurrent virtual users). [env: WLOAD_VUS]
    #[arg(short = 'u', long)]
    vus: Option<u32>,
    /// How long to run, e.g. 30s, 5m, 1h30m. [env: WLOAD_DURATION]
    // Checked with the other options (exit code 104, every problem named
    // at once), not by clap.
    #[arg(short, long, value_name = "DURATION")]
    duration: Option<String>,
    /// Total iterations, shared among the VUs (exact). [env: WLOAD_ITERATIONS]
    #[arg(short, long)]
    iterations: Option<u64>,
    /// A ramping stage DURATION:TARGET, repeatable: --stage 30s:100 --stage 1m:0
    /// [env: WLOAD_STAGES=30s:100,1m:0]
    #[arg(short, long = "stage", value_name = "DURATION:TARGET", value_parser = parse_stage)]
    stages: Vec<serde_json::Value>,
    /// A k6 options object (scenarios, thresholds, …) in JSON, or TOML for
    /// a .toml file. Flags and WLOAD_* variables override it; it overrides
    /// the test's own options().
    #[arg(short, long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Run only this part of every scenario, to split a test across
    /// machines: 0:1/3, 1/3:2/3, 2/3:1.
    #[arg(long, value_name = "FROM:TO", value_parser = Segment::parse)]
    execution_segment: Option<Segment>,
    /// A variable for the test (`vu::env`), repeatable: -e BASE_URL=http://127.0.0.1:8080
    #[arg(short = 'e', long = "env", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    env: Vec<(String, String)>,
    /// A parameter of a plugin, repeatable: -p think=none, or
    /// -p har=@recording.har for a file's contents (read by wload: plugins
    /// get no filesystem; `@@` starts a value with a literal `@`). Overrides
    /// the options file's "params". `wload plugin info` lists them.
    #[arg(short = 'p', long = "param", value_name = "NAME=VALUE", value_parser = RawParam::from_flag)]
    params: Vec<RawParam>,
    /// A library plugin the test imports an interface from, repeatable:
    /// --with session.wasm. wload links it into the test before the run
    /// (cached); an import no plugin exports, or exports at another
    /// version or type, is refused. Adds to the options file's "with".
    #[arg(long = "with", value_name = "PLUGIN.wasm")]
    with: Vec<PathBuf>,
    /// Let a plugin that declares it contact this host, repeatable:
    /// --allow-host 127.0.0.1:8080 (also *.example.com:443, 10.0.0.0/8,
    /// api.internal for any port, or * for any host). A plugin that
    /// declares a host the run does not grant is refused before any
    /// request; `wload plugin info` lists what it declares.
    #[arg(long = "allow-host", value_name = "HOST:PORT", value_parser = HostGrant::parse)]
    allow_hosts: Vec<HostGrant>,
    /// Let a plugin that declares it read this -e variable, repeatable:
    /// --allow-env API_TOKEN
    #[arg(long = "allow-env", value_name = "NAME")]
    allow_env: Vec<String>,
    /// A tag on every metric sample, repeatable: --tag team=payments
    #[arg(long = "tag", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    tags: Vec<(String, String)>,
    /// Requests per second at most, for the whole run (0: no limit).
    /// [env: WLOAD_RPS] [k6: rps]
    // Checked with the other options (exit code 104, every problem named),
    // a negative one too.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    rps: Option<String>,
    /// Start paused: setup runs and the VUs are initialised, then the run
    /// waits for a resume from its controller (`wload serve`'s API; a
    /// local run can only be stopped). [env: WLOAD_PAUSED] [k6: paused]
    // No `-p` (k6's short form): it is the plugins' `-p NAME=VALUE`.
    #[arg(long)]
    paused: bool,
    /// Write the end-of-test summary as JSON (k6's --summary-export layout).
    #[arg(long, value_name = "FILE")]
    summary_export: Option<PathBuf>,
    /// Write the run's complete result (every metric's figures with their
    /// histograms, thresholds, start time), for `wload merge` of the
    /// shards of a distributed run into one exact summary.
    #[arg(long, value_name = "FILE")]
    shard_summary: Option<PathBuf>,
    /// Start the load at this wall-clock time, once setup has run and the
    /// VUs are ready, so that the shards of a distributed run begin
    /// together: RFC 3339 (2026-12-01T14:30:00Z) or unix seconds.
    /// [env: WLOAD_START_AT]
    // Checked with the other flags (exit code 104), not by clap.
    #[arg(long, value_name = "TIME", env = "WLOAD_START_AT")]
    start_at: Option<String>,
    /// Trend statistics in the summary, e.g. avg,med,p(99),p(99.9),count
    /// [k6: summaryTrendStats]
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    summary_trend_stats: Vec<String>,
    /// Do not print the end-of-test summary.
    #[arg(long)]
    no_summary: bool,
    /// No progress output.
    #[arg(short, long)]
    quiet: bool,
    /// Stream results to a file, repeatable: json=FILE (JSON lines),
    /// csv=FILE, hdr=FILE (HdrHistogram interval log of every trend; see
    /// `wload merge`). One line per interval and metric/tag set.
    #[arg(long = "out", short = 'o', value_name = "KIND=FILE")]
    out: Vec<String>,
    // The duration flags below are text, read by `LoadArgs::options`: a
    // bad one is an invalid option (exit code 104), named with the others.
    /// Serve a live dashboard of the run on 127.0.0.1 (its address is
    /// printed): rates, VUs per scenario, latency percentiles, failures,
    /// phases, checks and thresholds, updated each --out-interval.
    /// [k6: K6_WEB_DASHBOARD]
    #[arg(long)]
    dashboard: bool,
    /// Port of --dashboard on 127.0.0.1; 0 takes a free one.
    /// [k6: K6_WEB_DASHBOARD_PORT]
    #[arg(long, default_value_t = wload_report::dashboard::DEFAULT_PORT, value_name = "PORT")]
    dashboard_port: u16,
    /// Write the run's HTML report to FILE at the end: one self-contained
    /// file that opens with no network. [k6: K6_WEB_DASHBOARD_EXPORT]
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Aggregation interval of --out and of the live progress.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    out_interval: String,
    /// Memory limit of each VU's instance, e.g. 64MiB, 1GiB.
    #[arg(long, default_value = "64MiB", value_parser = parse_size, env = "WLOAD_VU_MEMORY")]
    vu_memory: u64,
    /// Stop a guest that computes this long without waiting on HTTP or
    /// sleep (at least 10ms).
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    guest_timeout: String,
    /// Default timeout of an HTTP request (longer than 0s).
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    http_timeout: String,
    /// Compile the test every time instead of using the on-disk cache.
    #[arg(long)]
    no_cache: bool,
    #[command(flatten)]
    http: HttpArgs,
}

/// The HTTP client's run-wide options (k6's names in kebab case).
#[derive(Debug, Args)]
struct HttpArgs {
    /// Accept any TLS certificate (self-signed, expired, other host).
    /// [k6: insecureSkipTLSVerify]
    #[arg(long)]
    insecure_skip_tls_verify: bool,
    /// Also trust the CA certificates in this PEM file (repeatable).
    #[arg(long = "tls-ca", value_name = "FILE")]
    tls_ca: Vec<PathBuf>,
    /// Client certificate chain (PEM) for mutual TLS; needs --tls-client-key.
    #[arg(long, value_name = "FILE", requires = "tls_client_key")]
    tls_client_cert: Option<PathBuf>,
    /// Private key (PEM) of --tls-client-cert.
    #[arg(long, value_name = "FILE", requires = "tls_client_cert")]
    tls_client_key: Option<PathBuf>,
    /// Do not offer HTTP/2 to https:// targets.
    #[arg(long, conflicts_with = "h2c")]
    no_http2: bool,
    /// Speak HTTP/2 to http:// targets without asking (h2c prior knowledge).
    #[arg(long)]
    h2c: bool,
    /// Open a new connection for every request. [k6: noConnectionReuse]
    #[arg(long)]
    no_connection_reuse: bool,
    /// Close a VU's connections at the end of each iteration.
    /// [k6: noVUConnectionReuse]
    #[arg(long)]
    no_vu_connection_reuse: bool,
    /// How long DNS answers are reused (0: resolve every new connection).
    #[arg(long, default_value = "5m", value_name = "DURATION")]
    dns_ttl: String,
    // batch and batchPerHost of 0 are refused with the other options.
    /// Requests of one http batch in flight at once, per VU (default 20).
    /// [k6: batch]
    #[arg(long)]
    batch: Option<u32>,
    /// Requests of one http batch in flight to one host, per VU (default
    /// 6). [k6: batchPerHost]
    #[arg(long)]
    batch_per_host: Option<u32>,
    /// Redirects followed when a request sets no limit (default 10; 0:
    /// none). [k6: maxRedirects]
    #[arg(long)]
    max_redirects: Option<u32>,
    /// Largest response body kept, on the wire and again once decoded,
    /// e.g. 64MiB (the default), 10MB, 1048576: past it the request fails
    /// with error code 1060 (1702 decoded). [wload: maxResponseBodySize]
    /// (Checked with the options, so that its error comes with theirs.)
    #[arg(long)]
    max_response_body_size: Option<String>,
    /// Read and count response bodies but keep none, unless a request asks.
    /// [k6: discardResponseBodies]
    #[arg(long)]
    discard_response_bodies: bool,
    /// The User-Agent header of requests that set none (default
    /// wload/VERSION). [k6: userAgent]
    #[arg(long)]
    user_agent: Option<String>,
    /// Statuses that are not failures in http_req_failed, e.g. 200-299,404.
    #[arg(long, default_value = "200-399", value_parser = parse_statuses)]
    expected_statuses: StatusRanges,
    /// Source addresses to connect from, given out to VUs in turn:
    /// addresses, ranges and CIDRs, e.g. 127.0.0.2-127.0.0.9,10.0.0.0/24.
    /// Each one is a port range of its own: past ~14,000 connections to
    /// one server from one address, Linux's connect() slows down (see
    /// docs/guide.md, "Many VUs"). [k6: --local-ips]
    #[arg(long, value_name = "LIST", value_parser = LocalIps::parse, env = "WLOAD_LOCAL_IPS")]
    local_ips: Option<LocalIps>,
}

/// Inclusive status ranges of `--expected-statuses`.
#[derive(Debug, Clone)]
struct StatusRanges(Vec<(u16, u16)>);

fn parse_statuses(s: &str) -> Result<StatusRanges, String> {
    let err = || format!("invalid statuses {s:?}: expected e.g. 200-299,404");
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let lo: u16 = lo.trim().parse().map_err(|_| err())?;
        let hi: u16 = hi.trim().parse().map_err(|_| err())?;
        if !(100..=999).contains(&lo) || !(100..=999).contains(&hi) || lo > hi {
            return Err(err());
        }
        out.push((lo, hi));
    }
    if out.is_empty() {
        return Err(err());
    }
    Ok(StatusRanges(out))
}

impl HttpArgs {
    /// The client settings k6's options object has no key for; the rest
    /// travel as options (see [`HttpArgs::k6_options`]).
    fn config(&self, timeout: Duration, dns_ttl: Duration) -> ClientConfig {
        ClientConfig {
            timeout,
            tls: TlsOptions {
                insecure_skip_verify: false,
                ca_files: self.tls_ca.clone(),
                client_cert: self
                    .tls_client_cert
                    .clone()
                    .zip(self.tls_client_key.clone()),
            },
            http2: !self.no_http2,
            h2c: self.h2c,
            dns_ttl,
            expected_statuses: self.expected_statuses.0.clone(),
            local_ips: self.local_ips.clone().map(Arc::new),
            ..ClientConfig::default()
        }
    }

    /// The flags that are k6 options, as options-object keys, so that
    /// they take the precedence of flags over the same keys in a config
    /// file or the test's options().
    fn k6_options(&self, m: &mut Map<String, Value>) {
        let flags = [
            ("insecureSkipTLSVerify", self.insecure_skip_tls_verify),
            ("noConnectionReuse", self.no_connection_reuse),
            ("noVUConnectionReuse", self.no_vu_connection_reuse),
            ("discardResponseBodies", self.discard_response_bodies),
        ];
        for (key, set) in flags {
            if set {
                m.insert(key.into(), json!(true));
            }
        }
        let numbers = [
            ("batch", self.batch),
            ("batchPerHost", self.batch_per_host),
            ("maxRedirects", self.max_redirects),
        ];
        for (key, value) in numbers {
            if let Some(v) = value {
                m.insert(key.into(), json!(v));
            }
        }
        if let Some(ua) = &self.user_agent {
            m.insert("userAgent".into(), json!(ua));
        }
        if let Some(size) = &self.max_response_body_size {
            m.insert("maxResponseBodySize".into(), json!(size));
        }
    }
}

fn duration_flag(
    problems: &mut Vec<String>,
    flag: &str,
    text: &str,
    min: Option<(Duration, &str)>,
) -> Duration {
    match parse_duration(text) {
        Err(e) => problems.push(format!("--{flag}: {e}")),
        Ok(d) => match min {
            Some((min, why)) if d < min => problems.push(format!("--{flag} {text:?}: {why}")),
            _ => return d,
        },
    }
    Duration::ZERO
}

fn parse_stage(s: &str) -> Result<serde_json::Value, String> {
    config::stage_arg(s)
}

fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

/// `64MiB`, `1GiB`, `512M`, `1048576`.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("invalid size {s:?}: expected e.g. 64MiB or 1GiB"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("invalid size unit in {s:?}: use KiB, MiB or GiB")),
    };
    let bytes = n
        .checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} is too large"))?;
    if bytes < (1 << 20) {
        return Err(format!("size {s:?} is too small: at least 1MiB"));
    }
    Ok(bytes)
}

impl LoadArgs {
    /// The library plugins a script's build links against: `--with` and
    /// the options file's `with` (a bad options file is reported by the
    /// run, with the other options, not here).
    fn plugins_for_build(&self) -> Vec<PathBuf> {
        let mut with = self.with.clone();
        if let Some(path) = &self.config
            && let Ok(text) = std::fs::read(path)
            && let Ok(Value::Object(mut options)) = serde_json::from_slice(&text)
            && let Ok(from_file) =
                wload_engine::plugin::compose::take_from_options(&mut options, path)
        {
            with.extend(from_file);
        }
        with
    }

    /// The options these flags set, as a k6 options object.
    fn cli_options(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(v) = self.vus {
            m.insert("vus".into(), json!(v));
        }
        if let Some(d) = &self.duration {
            m.insert("duration".into(), json!(d));
        }
        if let Some(i) = self.iterations {
            m.insert("iterations".into(), json!(i));
        }
        if !self.stages.is_empty() {
            m.insert("stages".into(), Value::Array(self.stages.clone()));
        }
        if !self.tags.is_empty() {
            let tags: Map<String, Value> = self
                .tags
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            m.insert("tags".into(), Value::Object(tags));
        }
        self.http.k6_options(&mut m);
        if let Some(rps) = &self.rps {
            m.insert("rps".into(), config::number_or_text(rps));
        }
        if self.paused {
            m.insert("paused".into(), json!(true));
        }
        if !self.summary_trend_stats.is_empty() {
            m.insert("summaryTrendStats".into(), json!(self.summary_trend_stats));
        }
        m
    }

    /// The run these flags ask for. Every problem with the flags that are
    /// not options (those are checked with the other options, by the
    /// run), and with `WLOAD_*`, is reported at once, as invalid options.
    fn options(&self, test: TestSource, extra_env: &[(String, String)]) -> Result<RunOptions> {
        let mut problems = Vec::new();
        let mut outputs = Vec::new();
        let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
        for spec in &self.out {
            match OutSpec::parse(spec) {
                Ok(o) => {
                    problems.extend(o.settings_problems(&env));
                    outputs.push(o)
                }
                Err(e) => problems.push(e),
            }
        }
        let out_interval = duration_flag(
            &mut problems,
            "out-interval",
            &self.out_interval,
            Some((Duration::from_millis(10), "use at least 10ms, e.g. 1s")),
        );
        // A guest is stopped at an epoch tick: below one tick it would be
        // stopped at the first, and at 0 every call would fail.
        let guest_timeout = duration_flag(
            &mut problems,
            "guest-timeout",
            &self.guest_timeout,
            Some((
                EPOCH_TICK,
                "must be at least 10ms (how often the guest clock ticks), e.g. 10s",
            )),
        );
        // k6 refuses a zero request timeout too: every request would fail.
        let http_timeout = duration_flag(
            &mut problems,
            "http-timeout",
            &self.http_timeout,
            Some((
                Duration::from_nanos(1),
                "must be longer than 0s (every request would time out), e.g. 60s",
            )),
        );
        let dns_ttl = duration_flag(&mut problems, "dns-ttl", &self.http.dns_ttl, None);
        let start_at = self
            .start_at
            .as_deref()
            .and_then(|t| match wload_units::parse_instant(t) {
                Ok(at) => Some(at),
                Err(e) => {
                    problems.push(format!("--start-at: {e}"));
                    None
                }
            });
        let env_options = config::env_layer(std::env::vars()).unwrap_or_else(|errors| {
            problems.extend(errors);
            Map::new()
        });
        if !problems.is_empty() {
            return Err(invalid_flags(problems).into());
        }
        let mut env: HashMap<String, String> = extra_env.iter().cloned().collect();
        env.extend(self.env.iter().cloned());
        let params = self.params.clone();
        Ok(RunOptions {
            test,
            cli_options: self.cli_options(),
            env_options,
            config_file: self.config.clone(),
            env,
            params,
            with: self.with.clone(),
            grants: Grants {
                hosts: self.allow_hosts.clone(),
                env: self.allow_env.clone(),
                tenant: None,
            },
            segment: self.execution_segment.unwrap_or_default(),
            limits: SandboxLimits {
                memory: self.vu_memory,
                guest_timeout,
            },
            http: self.http.config(http_timeout, dns_ttl),
            cache: if self.no_cache {
                Cache::disabled()
            } else {
                Cache::new(Cache::default_dir())
            },
            quiet: self.quiet,
            progress: None,
            outputs,
            out_interval,
            sinks: Vec::new(),
            egress: None,
            admit: None,
            handle: None,
            rps_limit: None,
            start_at,
        })
    }
}

/// Invalid flags or `WLOAD_*` variables: exit code 104, one line for one
/// problem, else the list, as the run lists invalid options.
fn invalid_flags(problems: Vec<String>) -> ExitError {
    let message = match problems.as_slice() {
        [one] => format!("invalid options: {one}"),
        all => format!(
            "invalid options ({} problems):\n  {}",
            all.len(),
            all.join("\n  ")
        ),
    };
    ExitError {
        code: exit::INVALID_CONFIG,
        message,
    }
}

/// Parse the command line and run it; returns the process exit code.
pub async fn main() -> Result<u8> {
    let cli = Cli::parse();
    match cli.command {
        Command::Run { test, load } => {
            // A script is run (and uploaded) as the component built from it,
            // shown by the script's name.
            let (component, source) = match build::Lang::of(&test) {
                Some(lang) => {
                    let built =
                        build::component(&test, lang, load.no_cache, &load.plugins_for_build())?;
                    let name = test.display().to_string();
                    (built.clone(), TestSource::Named { path: built, name })
                }
                None => (test.clone(), TestSource::File(test)),
            };
            if let Some(server) = load.server.clone() {
                return load.run_remote(&component, &server).await;
            }
            let opts = load.options(source, &[])?;
            run_and_report(opts, &load).await
        }
        Command::Demo { load, .. } if load.server.is_some() => Err(invalid_flags(vec![
            "--server: the demo runs here, against its own server; use `wload run --server`"
                .to_owned(),
        ])
        .into()),
        Command::Serve {
            listen,
            data,
            admin_token_file,
            tenants,
            max_upload,
            run_wall_margin,
        } => {
            let admin_token = match admin_token_file {
                Some(path) => Some(
                    std::fs::read_to_string(&path)
                        .with_context(|| format!("cannot read the admin token {}", path.display()))?
                        .trim()
                        .to_owned(),
                ),
                None => std::env::var("WLOAD_ADMIN_TOKEN").ok(),
            }
            .filter(|t| !t.is_empty());
            let exe = std::env::current_exe().context("cannot find the wload binary")?;
            wload_server::serve(wload_server::ServeConfig {
                addr: listen,
                data,
                admin_token,
                tenants_file: tenants,
                exe,
                max_upload,
                wall_margin: run_wall_margin,
            })
            .await?;
            Ok(0)
        }
        Command::Worker { args } => wload_server::worker::main(&args).await,
        Command::Demo { mut load, port } => {
            let server = TargetServer::start(SocketAddr::from(([127, 0, 0, 1], port))).await?;
            let shaped = load.iterations.is_some()
                || load.duration.is_some()
                || !load.stages.is_empty()
                || load.config.is_some();
            if !shaped {
                load.vus.get_or_insert(10);
                load.duration = Some("10s".to_owned());
            }
            eprintln!(
                "wload demo: target server listening on {}",
                server.base_url()
            );
            let test = TestSource::Embedded {
                name: "examples/rust/hello (bundled)".to_owned(),
                bytes: HELLO_WASM,
            };
            let opts = load.options(test, &[("BASE_URL".to_owned(), server.base_url())])?;
            let code = run_and_report(opts, &load).await?;
            eprintln!(
                "wload demo: the target server saw {} requests on {} connections",
                server.stats.requests(),
                server.stats.connections()
            );
            Ok(code)
        }
        Command::Target { port, duration } => {
            let server = TargetServer::start(SocketAddr::from(([127, 0, 0, 1], port))).await?;
            eprintln!(
                "wload target: listening on {} (Ctrl-C to stop)",
                server.base_url()
            );
            match duration {
                Some(d) => {
                    tokio::select! {
                        _ = tokio::time::sleep(d) => {}
                        _ = tokio::signal::ctrl_c() => {}
                    }
                }
                None => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
            eprintln!(
                "wload target: {} requests on {} connections (at most {} open at once)",
                server.stats.requests(),
                server.stats.connections(),
                server.stats.max_open_connections()
            );
            Ok(0)
        }
        Command::Merge {
            files,
            summary_export,
            summary_trend_stats,
        } => {
            let stats = if summary_trend_stats.is_empty() {
                None
            } else {
                Some(
                    wload_output::parse_trend_stats(&summary_trend_stats).map_err(|e| {
                        ExitError {
                            code: exit::INVALID_CONFIG,
                            message: format!("invalid --summary-trend-stats: {e}"),
                        }
                    })?,
                )
            };
            let (text, json, code) = match merge::merge_files(&files, stats)? {
                merge::Input::Logs(merged) => (merge::render(&merged), merge::to_json(&merged), 0),
                merge::Input::Shards(merged) => (
                    merge::render_shards(&merged),
                    export::to_json(&merged.report),
                    merged.exit_code,
                ),
            };
            print_merge(&text, &json, summary_export.as_deref())?;
            Ok(code)
        }
        Command::K8s { command } => k8s::main(command).await,
        Command::Report { out, inputs } => {
            let model = wload_report::inputs::model(&inputs)?;
            wload_report::write_report(&out, &model)?;
            eprintln!("report written to {}", out.display());
            Ok(0)
        }
        Command::Build {
            script,
            output,
            with,
        } => {
            let Some(lang) = build::Lang::of(&script) else {
                bail!(
                    "{}: wload builds JavaScript (.js, .mjs), TypeScript (.ts) and Python (.py) \
                     tests; build tests in other languages with their SDK (docs/guide.md)",
                    script.display()
                );
            };
            let built = build::component(&script, lang, false, &with)?;
            std::fs::copy(&built, &output)
                .with_context(|| format!("cannot write {}", output.display()))?;
            eprintln!("wload: wrote {}", output.display());
            Ok(0)
        }
        Command::Compile { test, output } => {
            compile(&test, &output)?;
            Ok(0)
        }
        Command::Plugin { command } => command.run().await,
    }
}

/// Print a merge's summary, and write its export if asked.
fn print_merge(text: &str, json: &Value, export: Option<&std::path::Path>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    if let Some(path) = export {
        let text = serde_json::to_string_pretty(json).context("cannot encode the summary")?;
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

async fn run_and_report(mut opts: RunOptions, load: &LoadArgs) -> Result<u8> {
    let quiet = opts.quiet;
    // Opened before the run, so that an unwritable path is found before
    // any load; written only once the summary exists.
    let export = match &load.summary_export {
        Some(path) => Some(ExportFile::open(path, "--summary-export")?),
        None => None,
    };
    let shard_file = match &load.shard_summary {
        Some(path) => Some(ExportFile::open(path, "--shard-summary")?),
        None => None,
    };
    let report_file = match &load.report {
        Some(path) => Some(ExportFile::open(path, "--report")?),
        None => None,
    };
    // The dashboard listens before the run, so that its address is known
    // (and a taken port refused) before any load; it serves until exit.
    let dashboard = match load
        .dashboard
        .then(|| Dashboard::start(load.dashboard_port))
    {
        Some(Err(e)) => {
            for file in [export, shard_file, report_file].into_iter().flatten() {
                file.abandon();
            }
            return Err(e);
        }
        started => started.and_then(Result::ok),
    };
    let timelines = match &dashboard {
        Some(dashboard) => {
            eprintln!("dashboard: http://{}/", dashboard.addr());
            let (sink, timelines) = dashboard.collector()?;
            opts.sinks.push(("--dashboard".to_owned(), Box::new(sink)));
            Some(timelines)
        }
        None if report_file.is_some() => {
            let (sink, timelines) = Collector::new()?;
            opts.sinks.push(("--report".to_owned(), Box::new(sink)));
            Some(timelines)
        }
        None => None,
    };
    let seg = opts.segment;
    let shard_meta = shard::ShardMeta {
        test: opts.test.name(),
        part: shard::Part {
            from: (seg.from.num, seg.from.den),
            to: (seg.to.num, seg.to.den),
        },
        exit_code: 0,
    };
    let outcome = match run::run(opts).await {
        Ok(outcome) => outcome,
        Err(e) => {
            for file in [export, shard_file, report_file].into_iter().flatten() {
                file.abandon();
            }
            return Err(e);
        }
    };
    if let Some(file) = shard_file {
        let meta = shard::ShardMeta {
            exit_code: outcome.exit_code,
            ..shard_meta
        };
        let written = shard::to_json(&outcome.report, &meta).and_then(|json| file.write(&json));
        match written {
            Ok(path) if !quiet => eprintln!("shard summary written to {}", path.display()),
            Ok(_) => {}
            Err(e) if outcome.exit_code != 0 => eprintln!("ERROR {e:#}"),
            Err(e) => return Err(e),
        }
    }
    if !load.no_summary {
        let text = summary::render(&outcome.report);
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
    if let (Some(file), Some(timelines)) = (report_file, &timelines) {
        let (timeline, meta) = timelines.take();
        let page = wload_report::html::page(&wload_report::model::model(
            &outcome.report,
            &timeline,
            &meta,
        ));
        match file.write_text(&page) {
            Ok(path) if !quiet => eprintln!("report written to {}", path.display()),
            Ok(_) => {}
            Err(e) if outcome.exit_code != 0 => eprintln!("ERROR {e:#}"),
            Err(e) => return Err(e),
        }
    }
    if let Some(export) = export {
        let json = export::to_json(&outcome.report);
        match export.write(&json) {
            Ok(path) if !quiet => eprintln!("summary written to {}", path.display()),
            Ok(_) => {}
            // A failing threshold's 99 (or 105, 107) says more about the
            // run than the export's failure does: it is kept.
            Err(e) if outcome.exit_code != 0 => eprintln!("ERROR {e:#}"),
            Err(e) => return Err(e),
        }
    }
    Ok(outcome.exit_code)
}

/// A `--summary-export`, `--shard-summary` or `--report` file, opened
/// before the run.
struct ExportFile {
    path: PathBuf,
    file: std::fs::File,
    /// Whether it was made for this run (and so is removed if the run
    /// fails before there is a summary).
    created: bool,
}

impl ExportFile {
    fn open(path: &std::path::Path, flag: &str) -> Result<ExportFile> {
        let created = !path.exists();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .with_context(|| {
                format!(
                    "cannot write the {flag} file {} (checked before the run)",
                    path.display()
                )
            })?;
        Ok(ExportFile {
            path: path.to_owned(),
            file,
            created,
        })
    }

    fn write(self, json: &serde_json::Value) -> Result<PathBuf> {
        let text = serde_json::to_string_pretty(json).context("cannot encode the summary")?;
        self.write_text(&text)
    }

    fn write_text(mut self, text: &str) -> Result<PathBuf> {
        self.file
            .set_len(0)
            .and_then(|()| self.file.write_all(text.as_bytes()))
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        Ok(self.path)
    }

    fn abandon(self) {
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn compile(test: &std::path::Path, output: &std::path::Path) -> Result<()> {
    let bytes = std::fs::read(test).with_context(|| format!("cannot read {}", test.display()))?;
    if detect(&bytes) == FileKind::Precompiled {
        bail!("{} is already compiled", test.display());
    }
    // Components, and core modules that become one (AssemblyScript, Go);
    // the loader explains what any other file is.
    let probe = Sandbox::probe(SandboxLimits::default())?;
    let compiled = wload_engine::component::CompiledTest::from_bytes(
        &probe.engine,
        test,
        &bytes,
        &Cache::disabled(),
    )?;
    std::fs::write(output, compiled.cwasm.as_slice())
        .with_context(|| format!("cannot write {}", output.display()))?;
    eprintln!(
        "compiled {} ({} KiB) to {} ({} KiB)",
        test.display(),
        bytes.len() / 1024,
        output.display(),
        compiled.cwasm.len() / 1024
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_pairs_parse() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("2m"), Ok(2 << 20));
        assert!(parse_size("12").is_err());
        assert!(parse_size("64XB").is_err());
        assert_eq!(parse_key_value("A=b=c"), Ok(("A".into(), "b=c".into())));
        assert!(parse_key_value("novalue").is_err());
        assert!(parse_key_value("=x").is_err());
        assert_eq!(
            parse_statuses("200-299, 404").unwrap().0,
            vec![(200, 299), (404, 404)]
        );
        assert!(parse_statuses("299-200").is_err());
        assert!(parse_statuses("abc").is_err());
        assert!(parse_statuses("").is_err());
    }

    #[test]
    fn duration_flags_are_range_checked_every_problem_at_once() {
        let load = |args: &[&str]| {
            let cli = Cli::try_parse_from(["wload", "run", "t.wasm"].iter().chain(args)).unwrap();
            let Command::Run { load, .. } = cli.command else {
                unreachable!()
            };
            load
        };
        let err = load(&["--guest-timeout", "0", "--http-timeout", "0s"])
            .options(TestSource::File("t.wasm".into()), &[])
            .unwrap_err();
        let exit = err.downcast_ref::<ExitError>().unwrap();
        assert_eq!(exit.code, exit::INVALID_CONFIG);
        assert_eq!(
            exit.message,
            "invalid options (2 problems):\n  \
             --guest-timeout \"0\": must be at least 10ms (how often the guest clock ticks), e.g. 10s\n  \
             --http-timeout \"0s\": must be longer than 0s (every request would time out), e.g. 60s"
        );
        let err = load(&["--dns-ttl", "1e20"])
            .options(TestSource::File("t.wasm".into()), &[])
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid options: --dns-ttl: invalid duration \"1e20\": longer than the maximum of 876000h (100 years)"
        );
        // The options among the flags are checked by the run, with the
        // test's and the config file's: here they are only carried.
        let opts = load(&[
            "--duration",
            "1e20",
            "--dns-ttl",
            "0",
            "--guest-timeout",
            "10ms",
        ])
        .options(TestSource::File("t.wasm".into()), &[])
        .unwrap();
        assert_eq!(opts.cli_options["duration"], "1e20");
        assert_eq!(opts.limits.guest_timeout, Duration::from_millis(10));
        assert_eq!(opts.http.dns_ttl, Duration::ZERO);
    }

    #[test]
    fn start_at_is_read_as_an_instant_and_refused_with_the_other_flags() {
        let load = |args: &[&str]| {
            let cli = Cli::try_parse_from(["wload", "run", "t.wasm"].iter().chain(args)).unwrap();
            let Command::Run { load, .. } = cli.command else {
                unreachable!()
            };
            load.options(TestSource::File("t.wasm".into()), &[])
        };
        let opts = load(&["--start-at", "2026-12-01T15:30:00+01:00"]).unwrap();
        assert_eq!(
            opts.start_at,
            Some(std::time::UNIX_EPOCH + Duration::from_secs(1_796_135_400))
        );
        let err = load(&["--start-at", "soon", "--http-timeout", "0s"]).unwrap_err();
        let exit = err.downcast_ref::<ExitError>().unwrap();
        assert_eq!(exit.code, exit::INVALID_CONFIG);
        assert!(
            exit.message.contains("--start-at: invalid time \"soon\"")
                && exit.message.contains("--http-timeout"),
            "{}",
            exit.message
        );
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
