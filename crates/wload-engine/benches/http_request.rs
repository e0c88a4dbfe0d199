//! The HTTP request path against the built-in target server, in process:
//! one GET through the client alone (connection reuse, timing, pooled
//! body), and one iteration of `examples/rust/hello` (guest, host call,
//! client, check, metrics).
//!
//! `cargo bench -p wload-engine --bench http_request`

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{BenchVu, guest};
use criterion::{Criterion, criterion_group, criterion_main};
use wload_http::{BodyPool, Client, ClientConfig, RequestSpec, VuConnections};
use wload_target::TargetServer;

fn http_request(c: &mut Criterion) {
    // The server runs on the worker threads; the benchmark drives the
    // client from the main thread.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let server = rt
        .block_on(TargetServer::start(SocketAddr::from(([127, 0, 0, 1], 0))))
        .expect("target server");
    let base = server.base_url();

    let client = Client::new(ClientConfig::default(), BodyPool::new(64)).expect("client");
    let conns = VuConnections::default();
    let spec = RequestSpec {
        method: "GET".into(),
        url: format!("{base}/"),
        ..RequestSpec::default()
    };
    let mut vu = rt.block_on(BenchVu::new(&guest("hello"), &[("BASE_URL", &base)]));
    rt.block_on(vu.iterate("default"));

    let mut group = c.benchmark_group("http_request");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("client GET", |b| {
        b.iter(|| {
            let resp = rt.block_on(client.send(&conns, spec.clone()));
            assert_eq!(resp.status, 200, "{:?}", resp.error);
        })
    });
    group.bench_function("hello iteration", |b| {
        b.iter(|| rt.block_on(vu.iterate("default")))
    });
    group.finish();
}

criterion_group!(benches, http_request);
criterion_main!(benches);
