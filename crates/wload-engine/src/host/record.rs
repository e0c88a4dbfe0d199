//! Turning a finished request into samples of the built-in HTTP metrics.
//!
//! The tag set of a request (k6's `method`, `url`, `name`, `status`, ...)
//! is the same for almost every request a VU sends, so [`RequestTags`]
//! keeps the sets a VU has built: a repeated request costs a hash and a
//! comparison instead of a dozen allocations and a sort.

use std::hash::{Hash, Hasher};

use rustc_hash::{FxHashMap, FxHasher};
use std::sync::Arc;

use wload_metrics::{Builtin, Recorder, TagSet, Tags, intern};

use wload_http::HttpResponse;

/// Distinct request tag sets one VU keeps; past this the cache starts
/// over, so a test that requests unbounded distinct URLs stays bounded.
const MAX_CACHED: usize = 256;

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
    let set = Arc::new(request_tags(base, name, resp));
    record_with(rec, &set, resp, lateness);
}

/// A VU's cache of request tag sets, for requests tagged with its base
/// tags only (requests with tags of their own are rare and not cached).
#[derive(Default)]
pub struct RequestTags {
    sets: FxHashMap<u64, (Key, Tags)>,
}

/// What a request's tag set depends on: the base tags (the scenario's, or
/// a group's inside one) and the request's own.
struct Key {
    base: Tags,
    method: Box<str>,
    url: Box<str>,
    name: Option<Box<str>>,
    status: u16,
    expected: bool,
    proto: Option<&'static str>,
    tls_version: Option<&'static str>,
    code: u32,
}

/// Borrowed view of a [`Key`], hashed and compared without allocating.
struct KeyRef<'a> {
    base: &'a Tags,
    method: &'a str,
    url: &'a str,
    name: Option<&'a str>,
    status: u16,
    expected: bool,
    proto: Option<&'static str>,
    tls_version: Option<&'static str>,
    code: u32,
}

impl KeyRef<'_> {
    fn of<'a>(base: &'a Tags, name: Option<&'a str>, resp: &'a HttpResponse) -> KeyRef<'a> {
        KeyRef {
            base,
            method: &resp.method,
            url: &resp.url,
            name,
            status: resp.status,
            expected: resp.expected,
            proto: proto_tag(resp),
            tls_version: resp.tls_version,
            code: resp.error_code(),
        }
    }

    fn hash(&self) -> u64 {
        // Fx, not SipHash: the map is per VU and bounded, so a guest that
        // forced collisions would only slow down its own lookups.
        let mut h = FxHasher::default();
        // A tag set hashes as its cached hash: O(1).
        self.base.hash(&mut h);
        self.method.hash(&mut h);
        self.url.hash(&mut h);
        self.name.hash(&mut h);
        (self.status, self.expected, self.code).hash(&mut h);
        self.proto.hash(&mut h);
        self.tls_version.hash(&mut h);
        h.finish()
    }

    fn matches(&self, key: &Key) -> bool {
        (Arc::ptr_eq(self.base, &key.base) || **self.base == *key.base)
            && self.status == key.status
            && self.expected == key.expected
            && self.code == key.code
            && self.proto == key.proto
            && self.tls_version == key.tls_version
            && self.method == &*key.method
            && self.url == &*key.url
            && self.name == key.name.as_deref()
    }

    fn owned(&self) -> Key {
        Key {
            base: self.base.clone(),
            method: self.method.into(),
            url: self.url.into(),
            name: self.name.map(Into::into),
            status: self.status,
            expected: self.expected,
            proto: self.proto,
            tls_version: self.tls_version,
            code: self.code,
        }
    }
}

impl RequestTags {
    /// Record `resp` like [`record_request`], with `base` being the VU's
    /// tags of the moment (the scenario's, or its group's).
    pub fn record(
        &mut self,
        rec: &Recorder,
        base: &Tags,
        name: Option<&str>,
        resp: &HttpResponse,
        lateness: Option<u64>,
    ) {
        let set = self.tags(base, name, resp);
        record_with(rec, &set, resp, lateness);
    }

    fn tags(&mut self, base: &Tags, name: Option<&str>, resp: &HttpResponse) -> Tags {
        let key = KeyRef::of(base, name, resp);
        let hash = key.hash();
        if let Some((cached, set)) = self.sets.get(&hash)
            && key.matches(cached)
        {
            return set.clone();
        }
        let set = intern(request_tags(base, name, resp));
        if self.sets.len() >= MAX_CACHED {
            self.sets.clear();
        }
        self.sets.insert(hash, (key.owned(), set.clone()));
        set
    }

    /// Tag sets kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.sets.len()
    }
}

/// `proto` is only known once a response arrived.
fn proto_tag(resp: &HttpResponse) -> Option<&'static str> {
    resp.proto.filter(|_| resp.status != 0)
}

fn request_tags(base: &TagSet, name: Option<&str>, resp: &HttpResponse) -> TagSet {
    let status = resp.status.to_string();
    let code = resp.error_code();
    let code_text;
    let mut tags: Vec<(&str, &str)> = vec![
        ("method", &resp.method),
        ("url", &resp.url),
        ("name", name.unwrap_or(&resp.url)),
        ("status", &status),
        (
            "expected_response",
            if resp.expected { "true" } else { "false" },
        ),
    ];
    if let Some(proto) = proto_tag(resp) {
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
    TagSet::new(
        tags.into_iter()
            .map(|(k, v)| (Arc::<str>::from(k), Arc::<str>::from(v)))
            .chain(base.pairs().iter().cloned()),
    )
}

fn record_with(rec: &Recorder, set: &Tags, resp: &HttpResponse, lateness: Option<u64>) {
    let t = &resp.timings;
    let nanos = [
        (Builtin::HttpReqDuration.id(), t.duration),
        (Builtin::HttpReqBlocked.id(), t.blocked),
        (Builtin::HttpReqConnecting.id(), t.connecting),
        (Builtin::HttpReqTlsHandshaking.id(), t.tls_handshaking),
        (Builtin::HttpReqSending.id(), t.sending),
        (Builtin::HttpReqWaiting.id(), t.waiting),
        (Builtin::HttpReqReceiving.id(), t.receiving),
        (
            Builtin::HttpReqDurationCorrected.id(),
            t.duration + lateness.unwrap_or(0),
        ),
    ];
    // The corrected duration only exists for scheduled (open-model) runs.
    let nanos = if lateness.is_some() {
        &nanos[..]
    } else {
        &nanos[..nanos.len() - 1]
    };
    rec.record_all(
        set,
        &[
            (Builtin::HttpReqs.id(), 1.0),
            (
                Builtin::HttpReqFailed.id(),
                if resp.expected { 0.0 } else { 1.0 },
            ),
            (Builtin::DataSent.id(), resp.bytes_sent as f64),
            (Builtin::DataReceived.id(), resp.bytes_received as f64),
        ],
        nanos,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use wload_http::empty_response;

    fn response(url: &str, status: u16) -> HttpResponse {
        let mut r = empty_response("GET", url);
        r.status = status;
        r.expected = status < 400;
        r.proto = Some("HTTP/1.1");
        r
    }

    #[test]
    fn cached_sets_equal_fresh_ones_and_are_reused() {
        let base = Arc::new(TagSet::new([("scenario", "default")]));
        let mut cache = RequestTags::default();
        let ok = response("http://h/a", 200);
        let a = cache.tags(&base, None, &ok);
        assert_eq!(*a, request_tags(&base, None, &ok));
        let again = cache.tags(&base, None, &response("http://h/a", 200));
        assert!(Arc::ptr_eq(&a, &again));
        assert_eq!(cache.len(), 1);
        assert_eq!(a.get("status"), Some("200"));
        assert_eq!(a.get("proto"), Some("HTTP/1.1"));
        assert_eq!(a.get("scenario"), Some("default"));
    }

    #[test]
    fn each_base_set_has_its_own_entries() {
        let top = Arc::new(TagSet::new([("scenario", "default")]));
        let group = Arc::new(top.with([("group", "::cart")]));
        let mut cache = RequestTags::default();
        let ok = response("http://h/a", 200);
        let outside = cache.tags(&top, None, &ok);
        let inside = cache.tags(&group, None, &ok);
        assert_eq!(outside.get("group"), None);
        assert_eq!(inside.get("group"), Some("::cart"));
        // An equal base built elsewhere finds the same entry.
        let same = Arc::new(top.with([("group", "::cart")]));
        assert!(Arc::ptr_eq(&inside, &cache.tags(&same, None, &ok)));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn every_tag_input_makes_its_own_set() {
        let base = Arc::new(TagSet::empty());
        let mut cache = RequestTags::default();
        let a = cache.tags(&base, None, &response("http://h/a", 200));
        let b = cache.tags(&base, None, &response("http://h/a", 404));
        let c = cache.tags(&base, Some("grouped"), &response("http://h/a", 200));
        let d = cache.tags(&base, None, &response("http://h/b", 200));
        assert_eq!(b.get("error_code"), Some("1404"));
        assert_eq!(c.get("name"), Some("grouped"));
        assert_eq!(d.get("url"), Some("http://h/b"));
        for (x, y) in [(&a, &b), (&a, &c), (&a, &d), (&b, &c)] {
            assert_ne!(x, y);
        }
        assert_eq!(cache.len(), 4);
    }

    #[test]
    fn the_cache_stays_bounded() {
        let base = Arc::new(TagSet::empty());
        let mut cache = RequestTags::default();
        for i in 0..MAX_CACHED * 2 + 3 {
            cache.tags(&base, None, &response(&format!("http://h/{i}"), 200));
        }
        assert!(cache.len() <= MAX_CACHED);
    }
}
