//! Turning a finished request into samples of the built-in HTTP metrics.

use std::sync::Arc;

use crate::metrics::{Builtin, Recorder, TagSet};

use super::HttpResponse;

/// Record `resp` with k6's tags: `method`, `url`, `name` (the grouping name,
/// defaulting to the URL), `status`, `expected_response`, `error_code` when
/// there is one, `proto` and `tls_version` when known, plus `base`
/// (scenario, test-wide and request tags). Whether the status was expected
/// was decided by the client (the run's or the request's statuses).
/// `lateness` (ns) is how late the iteration started against its schedule
/// (open-model executors): it adds `http_req_duration_corrected`, the
/// duration as seen from when the request should have gone out.
pub fn record_request(
    rec: &Recorder,
    base: &TagSet,
    name: Option<&str>,
    resp: &HttpResponse,
    lateness: Option<u64>,
) {
    let expected = resp.expected;
    let status = resp.status.to_string();
    let code = resp.error_code();
    let code_text;
    let mut tags: Vec<(&str, &str)> = vec![
        ("method", &resp.method),
        ("url", &resp.url),
        ("name", name.unwrap_or(&resp.url)),
        ("status", &status),
        ("expected_response", if expected { "true" } else { "false" }),
    ];
    if let Some(proto) = resp.proto
        && resp.status != 0
    {
        tags.push(("proto", proto));
    }
    if let Some(version) = resp.tls_version {
        tags.push(("tls_version", version));
    }
    if code != 0 {
        code_text = code.to_string();
        tags.push(("error_code", &code_text));
    }
    // Base tags (set by the user) win over the engine's, as in k6.
    let set = Arc::new(TagSet::new(
        tags.into_iter()
            .map(|(k, v)| (Arc::<str>::from(k), Arc::<str>::from(v)))
            .chain(base.pairs().iter().cloned()),
    ));
    let t = &resp.timings;
    rec.record(
        &set,
        &[
            (Builtin::HttpReqs.id(), 1.0),
            (
                Builtin::HttpReqFailed.id(),
                if expected { 0.0 } else { 1.0 },
            ),
            (Builtin::DataSent.id(), resp.bytes_sent as f64),
            (Builtin::DataReceived.id(), resp.bytes_received as f64),
        ],
    );
    rec.record_nanos(
        &set,
        &[
            (Builtin::HttpReqDuration.id(), t.duration),
            (Builtin::HttpReqBlocked.id(), t.blocked),
            (Builtin::HttpReqConnecting.id(), t.connecting),
            (Builtin::HttpReqTlsHandshaking.id(), t.tls_handshaking),
            (Builtin::HttpReqSending.id(), t.sending),
            (Builtin::HttpReqWaiting.id(), t.waiting),
            (Builtin::HttpReqReceiving.id(), t.receiving),
        ],
    );
    if let Some(late) = lateness {
        rec.record_nanos(
            &set,
            &[(Builtin::HttpReqDurationCorrected.id(), t.duration + late)],
        );
    }
}
