//! The guest→host call path: what one host call costs a VU, measured
//! through a real instance of `examples/rust/calls` (each entry point makes
//! 100 calls of one kind; criterion's throughput is calls per second).
//! `iteration` is the host→guest call of an iteration that does nothing.
//!
//! `cargo bench -p wload-engine --bench host_call`

mod common;

use std::time::Duration;

use common::{BenchVu, guest};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// Host calls per iteration of `calls`' entry points (its `CALLS`).
const CALLS: u64 = 100;

fn host_call(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut vu = rt.block_on(BenchVu::new(&guest("calls"), &[("BASE_URL", "x")]));
    // The first iteration builds the guest's state.
    rt.block_on(vu.iterate("default"));

    let mut group = c.benchmark_group("host_call");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("iteration", |b| {
        b.iter(|| rt.block_on(vu.iterate("default")))
    });
    group.throughput(Throughput::Elements(CALLS));
    for exec in ["check", "counter", "env"] {
        group.bench_function(exec, |b| b.iter(|| rt.block_on(vu.iterate(exec))));
    }
    group.finish();
}

criterion_group!(benches, host_call);
criterion_main!(benches);
