//! The egress policy through the binary (issue 15, item 4): k6's
//! `blacklistIPs` and `blockHostnames` in a plain run, from an options
//! file and from `WLOAD_*`; a redirect from an allowed server to a
//! refused one; bad entries refused as invalid options; and a guest that
//! tries to go around the host's client by WASI sockets. (A tenant's
//! allowlist and special ranges are set by `wload serve`, through
//! `RunOptions.egress`: crates/wload-engine/tests/egress.rs runs them.)
//!
//! Loopback only: refused servers listen on 127.0.0.2 or are reached as
//! `localhost`, allowed ones on 127.0.0.1, and each counts the
//! connections it accepted, which must stay 0 for a refused one.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;
use wload_target::counting::{self, ok};

const BLACKLISTED_IP: &str = "1110";
const BLOCKED_HOSTNAME: &str = "1111";

/// [`counting::start`] on `ip` (loopback): a connection the policy
/// should have refused would succeed, and be counted.
fn counting(ip: &str, reply: String) -> (SocketAddr, Arc<AtomicUsize>) {
    let ip = ip.parse().expect("a loopback address");
    counting::start(ip, reply).expect("bind a loopback port")
}

/// `wload run hello.wasm` against `base_url` with `args` and `env`, with
/// `http_reqs` by `error_code` tag (`none` without one) from its `--out
/// json` lines (the summary export has no per-tag numbers).
fn hello(
    name: &str,
    base_url: &str,
    args: &str,
    env: &[(&str, &str)],
) -> (Finished, BTreeMap<String, f64>) {
    let dir = scratch(name);
    let (export, lines) = (dir.join("summary.json"), dir.join("out.jsonl"));
    let mut cmd = wload();
    cmd.arg("run")
        .arg(guest("hello"))
        .args(args.split_whitespace())
        .arg("-e")
        .arg(format!("BASE_URL={base_url}"))
        .arg("--summary-export")
        .arg(&export)
        .arg("--out")
        .arg(format!("json={}", lines.display()))
        .arg("--quiet")
        .envs(env.iter().copied());
    let output = run(cmd, Duration::from_secs(120));
    let summary = std::fs::read_to_string(&export)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    let mut codes = BTreeMap::new();
    for line in std::fs::read_to_string(&lines).unwrap_or_default().lines() {
        let Ok(line) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if line["metric"] != "http_reqs" {
            continue;
        }
        let code = line["tags"]["error_code"].as_str().unwrap_or("none");
        *codes.entry(code.to_owned()).or_default() += line["values"]["sum"].as_f64().unwrap_or(0.0);
    }
    (Finished { output, summary }, codes)
}

fn codes(list: &[(&str, f64)]) -> BTreeMap<String, f64> {
    list.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn blacklist_ips_refuse_an_address_without_connecting() {
    let (denied, seen) = counting("127.0.0.2", ok());
    let options = options_file(
        "egress_blacklist",
        &json!({"blacklistIPs": ["10.0.0.0/8", "127.0.0.2/32"]}),
    );
    let (run, by_code) = hello(
        "egress_blacklist",
        &format!("http://{denied}"),
        &format!("--iterations 3 {options}"),
        &[],
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(by_code, codes(&[(BLACKLISTED_IP, 3.0)]));
    assert_eq!(run.metric("http_req_failed", "passes"), 3.0);
    assert_eq!(run.check("status is 200"), (0, 3));
    assert_eq!(
        seen.load(Ordering::SeqCst),
        0,
        "the refused server saw a connection"
    );
    // Both keys are options wload runs, not ones it warns about.
    assert!(
        !run.stderr().contains("not supported by this version"),
        "{}",
        run.stderr()
    );
}

#[test]
fn block_hostnames_from_the_environment_refuse_a_name_before_its_lookup() {
    let (server, seen) = counting("127.0.0.1", ok());
    let (run, by_code) = hello(
        "egress_block_hostnames",
        &format!("http://LocalHost:{}", server.port()),
        "--iterations 2",
        &[("WLOAD_BLOCK_HOSTNAMES", "*.internal, localhost")],
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(by_code, codes(&[(BLOCKED_HOSTNAME, 2.0)]));
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    // The same server by its address is not blocked: the control.
    let (run, by_code) = hello(
        "egress_block_hostnames_control",
        &format!("http://{server}"),
        "--iterations 2",
        &[
            ("WLOAD_BLOCK_HOSTNAMES", "localhost"),
            ("WLOAD_BLACKLIST_IPS", "127.0.0.2"),
        ],
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(by_code, codes(&[("none", 2.0)]));
    assert_eq!(seen.load(Ordering::SeqCst), 1);
}

/// An allowed server redirects to a refused one: the redirect is recorded
/// (302, no error), the hop to the refused server fails with 1110 and that
/// server sees nothing.
#[test]
fn a_redirect_to_a_refused_address_fails_at_that_hop() {
    let (denied, denied_seen) = counting("127.0.0.2", ok());
    let (first, first_seen) = counting(
        "127.0.0.1",
        format!(
            "HTTP/1.1 302 Found\r\nlocation: http://{denied}/next\r\ncontent-length: 0\r\n\r\n"
        ),
    );
    let (run, by_code) = hello(
        "egress_redirect",
        &format!("http://{first}"),
        "--iterations 2",
        &[("WLOAD_BLACKLIST_IPS", "127.0.0.2/32")],
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(by_code, codes(&[(BLACKLISTED_IP, 2.0), ("none", 2.0)]));
    assert_eq!(first_seen.load(Ordering::SeqCst), 1);
    assert_eq!(denied_seen.load(Ordering::SeqCst), 0);
}

#[test]
fn bad_entries_are_invalid_options_each_named() {
    let options = options_file(
        "egress_bad",
        &json!({"blacklistIPs": ["10.0.0.0/8", "10.0.0.0/33"], "blockHostnames": ["ok.test", "inval*d"]}),
    );
    let (server, seen) = counting("127.0.0.1", ok());
    let (run, by_code) = hello(
        "egress_bad",
        &format!("http://{server}"),
        &options,
        &[("WLOAD_BLACKLIST_IPS", "not-an-ip")],
    );
    assert_eq!(run.code(), Some(104), "stderr: {}", run.stderr());
    let stderr = run.stderr();
    // The environment's list replaces the file's, as every WLOAD_* key does.
    for needle in [
        "invalid options (2 problems)",
        "blacklistIPs[0]: \"not-an-ip\" is not an IP address or CIDR",
        "blockHostnames[1]: invalid hostname pattern \"inval*d\"",
    ] {
        assert!(stderr.contains(needle), "no {needle:?} in {stderr}");
    }
    assert!(by_code.is_empty(), "{by_code:?}");
    assert_eq!(seen.load(Ordering::SeqCst), 0);
}

/// A guest's WASI sockets would go around the host's client and so the
/// policy: its TCP connect and its name lookup are refused, and the
/// server it dials sees nothing.
#[test]
fn a_guest_cannot_open_a_socket_or_look_up_a_name_by_wasi() {
    let (target, seen) = counting("127.0.0.1", ok());
    let (_server, run) = run_ok(
        "egress_wasi_sockets",
        "faults",
        &format!("--iterations 1 -e FAULT=sockets -e SOCKET_ADDR={target}"),
    );
    assert_eq!(run.check("WASI TCP connect is refused"), (1, 0));
    assert_eq!(run.check("WASI name lookup is refused"), (1, 0));
    assert_eq!(seen.load(Ordering::SeqCst), 0);
}
