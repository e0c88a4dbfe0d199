//! The binary runs tests of both versions of the test world: the same
//! test built against `wload:test@0.1.0` (examples/rust/hello_v0_1) and
//! through the SDK against `@0.2.0` (examples/rust/hello) gives the
//! server the same requests and the summary the same counts.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::support::*;

/// The counts of the summary export that do not depend on timing.
const COUNTS: [(&str, &str); 6] = [
    ("http_reqs", "count"),
    ("iterations", "count"),
    ("body_bytes", "count"),
    ("data_sent", "count"),
    ("data_received", "count"),
    ("checks", "passes"),
];

#[test]
fn a_0_1_and_a_0_2_test_give_the_same_server_view_and_metrics() {
    let server = server();
    let mut seen = Vec::new();
    for guest in ["hello_v0_1", "hello"] {
        let before = server.stats.requests.load(Ordering::Relaxed);
        let run = run_test(
            &format!("worlds-{guest}"),
            guest,
            &server.base_url(),
            "--vus 3 --iterations 30 -e URL_PATH=/bytes/100",
            Duration::from_secs(120),
        );
        assert_eq!(run.code(), Some(0), "{guest}: {}", run.stderr());
        let requests = server.stats.requests.load(Ordering::Relaxed) - before;
        let counts: Vec<f64> = COUNTS
            .iter()
            .map(|(metric, field)| run.metric(metric, field))
            .collect();
        seen.push((guest, requests, counts, run.check("status is 200")));
    }
    let (_, requests, counts, check) = &seen[0];
    assert_eq!(*requests, 30);
    assert_eq!(*check, (30, 0));
    assert_eq!(counts[2], 3000.0, "body_bytes: 30 bodies of 100 bytes");
    for (guest, other_requests, other_counts, other_check) in &seen[1..] {
        assert_eq!(other_requests, requests, "{guest}: the server's count");
        assert_eq!(other_check, check, "{guest}: the check");
        for ((name, field), (a, b)) in COUNTS.iter().zip(counts.iter().zip(other_counts)) {
            assert_eq!(a, b, "{guest}: {name}.{field}");
        }
    }
}
