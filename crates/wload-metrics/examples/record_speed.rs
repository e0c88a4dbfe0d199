//! A timing loop for `metrics::Recorder::record_all`, the call every HTTP
//! request makes: prints nanoseconds per call (not a
//! test: figures depend on the machine). Run with
//! `cargo run --release -p wload-metrics --example record_speed`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use wload_metrics::{Builtin, Recorder, Registry, TagSet, Tags};

fn main() {
    let rec = Recorder::new(Arc::new(Registry::new()));
    // Tag sets as a run makes them: a few scenarios/URLs, many requests.
    let sets: Vec<Tags> = (0..8)
        .map(|i| {
            Arc::new(TagSet::new([
                ("scenario", "default".to_owned()),
                ("method", "GET".to_owned()),
                ("name", format!("http://127.0.0.1:8080/item/{i}")),
                ("status", "200".to_owned()),
                ("expected_response", "true".to_owned()),
            ]))
        })
        .collect();
    let n = 2_000_000u64;
    for round in 0..3 {
        let t = Instant::now();
        for i in 0..n {
            let tags = &sets[(i % 8) as usize];
            rec.record_all(
                black_box(tags),
                &[
                    (Builtin::HttpReqs.id(), 1.0),
                    (Builtin::HttpReqFailed.id(), 0.0),
                    (Builtin::DataSent.id(), 120.0),
                    (Builtin::DataReceived.id(), 230.0),
                ],
                &[
                    (Builtin::HttpReqDuration.id(), 100_000 + i % 5000),
                    (Builtin::HttpReqWaiting.id(), 90_000 + i % 5000),
                    (Builtin::HttpReqSending.id(), 1_000),
                    (Builtin::HttpReqReceiving.id(), 2_000),
                ],
            );
        }
        let per = t.elapsed().as_nanos() as f64 / n as f64;
        println!("round {round}: {per:.1} ns per request (record_all, 8 samples)");
    }
    black_box(rec.snapshot());
}
