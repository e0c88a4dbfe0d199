//! A tenant's egress policy (`RunOptions.egress`, what `wload serve`
//! sets) on a whole run of a real guest: the request the test asks for
//! fails with k6's code for a refused address, its server sees no
//! connection, a redirect to a refused port fails at that hop, and the
//! test's own options narrow the policy. Loopback only: the policy allows
//! one port of 127.0.0.1 and the refused servers listen on others.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use wload_engine::component::Cache;
use wload_engine::executor::Segment;
use wload_engine::run::{RunOptions, TestSource, run};
use wload_engine::sandbox::SandboxLimits;
use wload_http::egress::AllowRule;
use wload_http::{ClientConfig, EgressPolicy};
use wload_metrics::Builtin;
use wload_metrics::Sink;
use wload_target::counting::{self, ok};

#[path = "../../wload/guests.rs"]
mod guests;

/// [`counting::start`] on 127.0.0.1.
fn counting(reply: String) -> (SocketAddr, Arc<AtomicUsize>) {
    counting::start([127, 0, 0, 1].into(), reply).expect("bind a loopback port")
}

fn redirect_to(to: SocketAddr) -> String {
    format!("HTTP/1.1 302 Found\r\nlocation: http://{to}/x\r\ncontent-length: 0\r\n\r\n")
}

/// `hello` run twice against `base`, under `tenant` and with `options`
/// from the command line; its `http_reqs` by `error_code` tag (`none`
/// without one).
async fn hello(tenant: &EgressPolicy, base: SocketAddr, options: Value) -> BTreeMap<String, u64> {
    let mut cli_options = json!({"iterations": 2});
    if let (Some(all), Some(more)) = (cli_options.as_object_mut(), options.as_object()) {
        all.extend(more.clone());
    }
    let opts = RunOptions {
        test: TestSource::File(guests::built_guest("hello")),
        cli_options: cli_options.as_object().cloned().unwrap_or_default(),
        env_options: Default::default(),
        params: Vec::new(),
        with: Vec::new(),
        grants: Default::default(),
        config_file: None,
        env: HashMap::from([("BASE_URL".to_owned(), format!("http://{base}"))]),
        limits: SandboxLimits::default(),
        http: ClientConfig::default(),
        cache: Cache::disabled(),
        segment: Segment::FULL,
        quiet: true,
        progress: None,
        outputs: Vec::new(),
        out_interval: Duration::from_secs(1),
        sinks: Vec::new(),
        egress: Some(tenant.clone()),
        admit: None,
        handle: None,
        rps_limit: None,
        start_at: None,
    };
    let outcome = run(opts).await.expect("the run completes");
    let mut codes = BTreeMap::new();
    for (tags, sink) in outcome.report.snapshot.series_of(Builtin::HttpReqs.id()) {
        let code = tags.get("error_code").unwrap_or("none").to_owned();
        if let Sink::Counter { sum, .. } = sink {
            *codes.entry(code).or_default() += *sum as u64;
        }
    }
    codes
}

fn codes(list: &[(&str, u64)]) -> BTreeMap<String, u64> {
    list.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_reaches_only_what_its_policy_allows() {
    let (allowed, allowed_seen) = counting(ok());
    let (denied, denied_seen) = counting(ok());
    let (redirecting, redirecting_seen) = counting(redirect_to(denied));
    let allow = [allowed, redirecting]
        .iter()
        .map(|a| AllowRule::parse(&a.to_string()).expect("a rule"))
        .collect();
    let tenant = EgressPolicy::tenant(Some(allow));

    assert_eq!(
        hello(&tenant, allowed, json!({})).await,
        codes(&[("none", 2)])
    );
    assert_eq!(
        allowed_seen.load(Ordering::SeqCst),
        1,
        "one kept-alive connection"
    );

    assert_eq!(
        hello(&tenant, denied, json!({})).await,
        codes(&[("1110", 2)])
    );
    // Each redirect is a request of its own; the hop after it is refused.
    assert_eq!(
        hello(&tenant, redirecting, json!({})).await,
        codes(&[("1110", 2), ("none", 2)])
    );
    assert_eq!(redirecting_seen.load(Ordering::SeqCst), 1);

    // The test's options narrow the tenant's policy.
    assert_eq!(
        hello(&tenant, allowed, json!({"blacklistIPs": ["127.0.0.1/32"]})).await,
        codes(&[("1110", 2)])
    );
    assert_eq!(
        hello(&tenant, allowed, json!({"blockHostnames": ["*"]})).await,
        codes(&[("1111", 2)])
    );
    assert_eq!(allowed_seen.load(Ordering::SeqCst), 1);
    assert_eq!(
        denied_seen.load(Ordering::SeqCst),
        0,
        "the refused server saw a connection"
    );
}
