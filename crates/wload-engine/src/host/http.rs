//! `wload:test/http`: requests go to the shared [`wload_http::Client`] on
//! this VU's connections; responses become resources in the VU's table,
//! their bodies still in pooled host buffers.
//!
//! A VU's host calls are polled on its fiber stack, and every page of it
//! the deepest call touches stays resident for the VU's life. The client's
//! futures (hyper, rustls, timeouts) are deep, so in runs of many VUs a
//! request runs as a tokio task of its own that the VU awaits: the fiber
//! only ever holds the guest and a few shallow host frames. With few VUs
//! the stack pages cost little and the extra task hop per request costs
//! a quarter of the throughput (the worker idles between hops), so the
//! requests are polled inline (see docs/BENCHMARKS.md).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::Resource;

use super::record::record_request;
use super::wload::test::http::{self as wit, Host, HostResponse};
use super::{Stopped, VuScenario, VuState};
use crate::rate::RateLimiter;
use crate::task::Owned;
use wload_http::{
    BodyMode, Client, CookieJar, ErrorCode, HttpError, HttpResponse, RequestSpec, VuConnections,
    boxed_in_place,
};
use wload_metrics::Tags;

/// From this many VUs in the pool on, requests run as tasks of their own.
pub(super) const SPAWN_FROM_VUS: u32 = 256;

/// A guest request of a batch with what came with it.
type Guest = (
    wit::Request,
    Option<wit::RequestOptions>,
    Option<wit::RequestLimits>,
);

/// A guest request split into what the client needs and what the
/// metrics need.
fn split(
    req: wit::Request,
    opts: Option<wit::RequestOptions>,
    limits: Option<wit::RequestLimits>,
) -> (RequestSpec, Option<String>, Vec<(String, String)>) {
    let mut spec = RequestSpec {
        method: req.method,
        url: req.url,
        headers: req.headers,
        body: req.body.map(bytes::Bytes::from),
        timeout: req.timeout.map(Duration::from_nanos),
        // `keep`, the default, leaves the choice to the run.
        body_mode: match req.body_mode {
            wit::BodyMode::Keep => None,
            wit::BodyMode::Discard => Some(BodyMode::Discard),
        },
        max_redirects: None,
        expected_statuses: None,
        max_body_size: limits.and_then(|l| l.max_body_size),
    };
    if let Some(o) = opts {
        spec.max_redirects = o.max_redirects;
        spec.expected_statuses = o
            .expected_statuses
            .map(|r| r.into_iter().map(|r| (r.min, r.max)).collect());
        if let Some(mode) = o.body_mode {
            spec.body_mode = Some(match mode {
                wit::BodyMode::Keep => BodyMode::Keep,
                wit::BodyMode::Discard => BodyMode::Discard,
            });
        }
    }
    (spec, req.name, req.tags)
}

impl VuState {
    fn tags_with(&self, extra: Vec<(String, String)>) -> Tags {
        if extra.is_empty() {
            self.tags().clone()
        } else {
            Arc::new(self.tags().with(extra))
        }
    }

    /// Record the response and its redirect hops, and hand the response
    /// to the guest.
    fn finish(
        &mut self,
        mut resp: HttpResponse,
        name: Option<String>,
        tags: &Tags,
    ) -> wasmtime::Result<Resource<HttpResponse>> {
        self.record(&mut resp, name.as_deref(), tags);
        Ok(self.table.push(resp)?)
    }

    /// Record requests the hard stop cut (each already marked
    /// [`wload_http::interrupted`]), and end the guest's call: the VU's
    /// iteration is over, interrupted, as k6 ends it.
    fn interrupted(&mut self, cut: Vec<(HttpResponse, Option<String>, Tags)>) -> wasmtime::Error {
        for (mut resp, name, tags) in cut {
            self.record(&mut resp, name.as_deref(), &tags);
        }
        self.stopped = Some(Stopped::HardStop);
        wasmtime::Error::msg("the run was stopped")
    }

    /// Record the response and its redirect hops.
    fn record(&mut self, resp: &mut HttpResponse, name: Option<&str>, tags: &Tags) {
        let rec = &self.shared.recorder;
        let lateness = self.lateness.map(|l| l.as_nanos() as u64);
        // Requests with only the VU's own tags (nearly all) take their
        // tag sets from the VU's cache.
        let cached = Arc::ptr_eq(tags, self.tags());
        for hop in resp.hops.iter().chain([&*resp]) {
            if cached {
                self.request_tags.record(rec, tags, name, hop, lateness);
            } else {
                record_request(rec, tags, name, hop, lateness);
            }
        }
        // The guest only needs how many hops there were.
        resp.redirects = resp.hops.len() as u32;
        resp.hops = Vec::new();
    }

    /// Connections do not outlive an iteration with
    /// `--no-vu-connection-reuse`.
    fn note_iteration(&self) {
        let drop_idle = self.shared.client.config().no_vu_connection_reuse;
        self.conns.begin_iteration(self.iteration, drop_idle);
    }

    pub(super) async fn send_one(
        &mut self,
        req: wit::Request,
        opts: Option<wit::RequestOptions>,
        limits: Option<wit::RequestLimits>,
    ) -> wasmtime::Result<Resource<HttpResponse>> {
        self.note_iteration();
        let (mut spec, name, tags) = split(req, opts, limits);
        let tags = self.tags_with(tags);
        let client = self.shared.client.clone();
        let resp = if self.spawn_requests {
            // What the record of a cut request needs, once the task that
            // owns the request is gone.
            let cut = (spec.method.clone(), spec.url.clone());
            let conns = self.conns.clone();
            // The task's future stays small (boxed inside), since tokio
            // moves it by value through several frames of the fiber while
            // spawning.
            // Cancelled when the VU stops waiting for it (the run was
            // stopped mid-request), as an inline future would be.
            let task =
                Owned::spawn(async move { boxed_in_place(|| client.send(&conns, spec)).await });
            match unless_hard_stopped(&self.scenario, task).await {
                Some(done) => done.unwrap_or_else(|e| {
                    wload_http::failed(
                        "",
                        "",
                        HttpError::new(ErrorCode::Generic, format!("request task failed: {e}")),
                    )
                }),
                None => {
                    let mut resp = wload_http::empty_response(&cut.0, &cut.1);
                    wload_http::interrupted(&mut resp);
                    return Err(self.interrupted(vec![(resp, name, tags)]));
                }
            }
        } else {
            let mut resp = wload_http::empty_response("", "");
            let sent = send_inline(client, &self.conns, &mut spec, &mut resp);
            if unless_hard_stopped(&self.scenario, sent).await.is_none() {
                resp.method = std::mem::take(&mut spec.method);
                resp.url = std::mem::take(&mut spec.url);
                wload_http::interrupted(&mut resp);
                return Err(self.interrupted(vec![(resp, name, tags)]));
            }
            resp
        };
        self.resume_guest();
        self.finish(resp, name, &tags)
    }

    pub(super) async fn send_many(
        &mut self,
        reqs: Vec<Guest>,
    ) -> wasmtime::Result<Vec<Resource<HttpResponse>>> {
        self.note_iteration();
        let mut specs = Vec::with_capacity(reqs.len());
        let mut meta = Vec::with_capacity(reqs.len());
        for (req, opts, limits) in reqs {
            let (spec, name, tags) = split(req, opts, limits);
            specs.push(spec);
            meta.push((name, self.tags_with(tags)));
        }
        // What the records of cut requests need: the batch owns the specs.
        let targets: Vec<(String, String)> = specs
            .iter()
            .map(|s| (s.method.clone(), s.url.clone()))
            .collect();
        let client = self.shared.client.clone();
        let sent = if self.spawn_requests {
            let conns = self.conns.clone();
            let task =
                Owned::spawn(async move { boxed_in_place(|| client.batch(&conns, specs)).await });
            unless_hard_stopped(&self.scenario, task)
                .await
                .map(|done| done.map_err(|e| e.to_string()))
        } else {
            unless_hard_stopped(&self.scenario, batch_inline(client, &self.conns, specs))
                .await
                .map(Ok)
        };
        let Some(resps) = sent else {
            let cut = targets
                .iter()
                .zip(meta)
                .map(|((method, url), (name, tags))| {
                    let mut resp = wload_http::empty_response(method, url);
                    wload_http::interrupted(&mut resp);
                    (resp, name, tags)
                })
                .collect();
            return Err(self.interrupted(cut));
        };
        let resps = resps.unwrap_or_else(|e| {
            // The batch's own tasks end with it; none of its responses
            // came.
            let failed = || {
                wload_http::failed(
                    "",
                    "",
                    HttpError::new(ErrorCode::Generic, format!("batch task failed: {e}")),
                )
            };
            meta.iter().map(|_| failed()).collect()
        });
        self.resume_guest();
        resps
            .into_iter()
            .zip(meta)
            .map(|(resp, (name, tags))| self.finish(resp, name, &tags))
            .collect()
    }
}

/// A host call's future, boxed.
type Boxed<'a, T> = Pin<Box<dyn Future<Output = wasmtime::Result<T>> + Send + 'a>>;

impl VuState {
    /// [`VuState::send_one`] once the run's `rps` has a slot for it: a
    /// boxed future of its own, called only in runs with an `rps`, so
    /// that the host calls of the others are what they were without it
    /// but for one `Option` check.
    #[inline(never)]
    pub(super) fn send_paced(
        &mut self,
        req: wit::Request,
        opts: Option<wit::RequestOptions>,
        limits: Option<wit::RequestLimits>,
    ) -> Boxed<'_, Resource<HttpResponse>> {
        Box::pin(async move {
            if let Some(limit) = &self.shared.rps
                && !pace(limit, &self.scenario, 1).await
            {
                return Err(self.interrupted(Vec::new()));
            }
            self.send_one(req, opts, limits).await
        })
    }

    /// [`VuState::send_many`] once the run's `rps` has a slot for each of
    /// its requests (see [`VuState::send_paced`]).
    #[inline(never)]
    pub(super) fn send_many_paced(
        &mut self,
        reqs: Vec<Guest>,
    ) -> Boxed<'_, Vec<Resource<HttpResponse>>> {
        Box::pin(async move {
            if let Some(limit) = &self.shared.rps
                && !reqs.is_empty()
                && !pace(limit, &self.scenario, reqs.len()).await
            {
                return Err(self.interrupted(Vec::new()));
            }
            self.send_many(reqs).await
        })
    }
}

/// Wait for the run's `rps` slots of `n` requests; false when a hard stop
/// cut the wait: the requests were not sent, and are not recorded (none
/// left, as in k6). The wait is the host's (no guest timeout runs), and
/// comes before the client sees the request: it is in no request timing.
async fn pace(limit: &RateLimiter, scenario: &VuScenario, n: usize) -> bool {
    let Some(at) = limit.claim(n) else {
        return true;
    };
    let wait = tokio::time::sleep_until(tokio::time::Instant::from_std(at));
    unless_hard_stopped(scenario, wait).await.is_some()
}

/// The inline path's future, built and boxed out of line: the deep
/// future then only exists on that path, and the frames of
/// `send_one`/`send_many` (on the fiber in both modes) stay small.
#[inline(never)]
fn send_inline<'a>(
    client: Arc<Client>,
    conns: &'a VuConnections,
    spec: &'a mut RequestSpec,
    out: &'a mut HttpResponse,
) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
    boxed_in_place(|| async move { client.send_into(conns, spec, out).await })
}

/// `work`'s output, or `None` when the scenario or the run is stopped hard
/// first (checked before each poll). No waiter of its own is registered:
/// the VU's task is woken by the hard stop already (the executor's
/// [`crate::executor::HardStop`]), and that poll sees the flag.
async fn unless_hard_stopped<T>(scenario: &VuScenario, work: impl Future<Output = T>) -> Option<T> {
    let mut work = std::pin::pin!(work);
    std::future::poll_fn(|cx| {
        if scenario.hard_stopped() {
            return std::task::Poll::Ready(None);
        }
        work.as_mut().poll(cx).map(Some)
    })
    .await
}

/// [`send_inline`] for a batch.
#[inline(never)]
fn batch_inline(
    client: Arc<Client>,
    conns: &VuConnections,
    specs: Vec<RequestSpec>,
) -> Pin<Box<dyn Future<Output = Vec<HttpResponse>> + Send + '_>> {
    boxed_in_place(|| async move { client.batch(conns, specs).await })
}

impl Host for VuState {
    async fn send(&mut self, req: wit::Request) -> wasmtime::Result<Resource<HttpResponse>> {
        if self.shared.rps.is_some() {
            return self.send_paced(req, None, None).await;
        }
        self.send_one(req, None, None).await
    }

    async fn batch(
        &mut self,
        reqs: Vec<wit::Request>,
    ) -> wasmtime::Result<Vec<Resource<HttpResponse>>> {
        let reqs = reqs.into_iter().map(|r| (r, None, None)).collect();
        if self.shared.rps.is_some() {
            return self.send_many_paced(reqs).await;
        }
        self.send_many(reqs).await
    }

    async fn send_with(
        &mut self,
        req: wit::Request,
        options: wit::RequestOptions,
    ) -> wasmtime::Result<Resource<HttpResponse>> {
        if self.shared.rps.is_some() {
            return self.send_paced(req, Some(options), None).await;
        }
        self.send_one(req, Some(options), None).await
    }

    async fn batch_with(
        &mut self,
        reqs: Vec<(wit::Request, wit::RequestOptions)>,
    ) -> wasmtime::Result<Vec<Resource<HttpResponse>>> {
        let reqs = reqs.into_iter().map(|(r, o)| (r, Some(o), None)).collect();
        if self.shared.rps.is_some() {
            return self.send_many_paced(reqs).await;
        }
        self.send_many(reqs).await
    }

    async fn send_with_limits(
        &mut self,
        req: wit::Request,
        options: wit::RequestOptions,
        limits: wit::RequestLimits,
    ) -> wasmtime::Result<Resource<HttpResponse>> {
        if self.shared.rps.is_some() {
            return self.send_paced(req, Some(options), Some(limits)).await;
        }
        self.send_one(req, Some(options), Some(limits)).await
    }

    async fn batch_with_limits(
        &mut self,
        reqs: Vec<(wit::Request, wit::RequestOptions, wit::RequestLimits)>,
    ) -> wasmtime::Result<Vec<Resource<HttpResponse>>> {
        let reqs = reqs
            .into_iter()
            .map(|(r, o, l)| (r, Some(o), Some(l)))
            .collect();
        if self.shared.rps.is_some() {
            return self.send_many_paced(reqs).await;
        }
        self.send_many(reqs).await
    }

    fn cookies(&mut self, url: String) -> wasmtime::Result<Vec<(String, String)>> {
        let Some((secure, host, path)) = cookie_scope(&url) else {
            return Ok(Vec::new());
        };
        Ok(self
            .conns
            .with_jar(|jar| jar.matching(secure, &host, &path)))
    }

    fn set_cookie(&mut self, url: String, cookie: String) -> wasmtime::Result<Result<(), String>> {
        let Some((_, host, path)) = cookie_scope(&url) else {
            return Ok(Err(format!(
                "invalid URL {url:?}: expected http:// or https://"
            )));
        };
        if !CookieJar::parses(&cookie) {
            return Ok(Err(format!(
                "invalid cookie {cookie:?}: expected name=value[; attributes]"
            )));
        }
        self.conns
            .with_jar(|jar| jar.store_header(&host, &path, &cookie));
        Ok(Ok(()))
    }

    fn clear_cookies(&mut self) -> wasmtime::Result<()> {
        self.conns.with_jar(|jar| jar.clear());
        Ok(())
    }
}

/// `(secure, host, path)` of a URL, for the cookie jar.
fn cookie_scope(url: &str) -> Option<(bool, String, String)> {
    let uri: http::Uri = url.parse().ok()?;
    let secure = match uri.scheme_str()? {
        "https" => true,
        "http" => false,
        _ => return None,
    };
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    Some((secure, host.to_owned(), uri.path().to_owned()))
}

impl HostResponse for VuState {
    fn status(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<u16> {
        Ok(self.table.get(&r)?.status)
    }

    fn headers(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(self.table.get(&r)?.headers.to_list())
    }

    fn header(
        &mut self,
        r: Resource<HttpResponse>,
        name: String,
    ) -> wasmtime::Result<Option<String>> {
        let resp = self.table.get(&r)?;
        Ok(resp
            .headers
            .get(&name)
            .map(|v| String::from_utf8_lossy(v).into_owned()))
    }

    fn timings(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<wit::Timings> {
        let t = self.table.get(&r)?.timings;
        Ok(wit::Timings {
            blocked: t.blocked,
            connecting: t.connecting,
            tls_handshaking: t.tls_handshaking,
            sending: t.sending,
            waiting: t.waiting,
            receiving: t.receiving,
            duration: t.duration,
        })
    }

    fn error(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<Option<String>> {
        Ok(self
            .table
            .get(&r)?
            .error
            .as_ref()
            .map(|e| e.message.clone()))
    }

    fn error_code(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<u32> {
        Ok(self.table.get(&r)?.error_code())
    }

    fn body_len(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<u64> {
        Ok(self.table.get(&r)?.body_len)
    }

    fn body(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<Vec<u8>> {
        Ok(self.table.get(&r)?.body_bytes().to_vec())
    }

    fn text(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<String> {
        Ok(String::from_utf8_lossy(self.table.get(&r)?.body_bytes()).into_owned())
    }

    fn url(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<String> {
        Ok(self.table.get(&r)?.url.clone())
    }

    fn proto(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<String> {
        Ok(self.table.get(&r)?.proto.unwrap_or("").to_owned())
    }

    fn tls_version(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<String> {
        Ok(self.table.get(&r)?.tls_version.unwrap_or("").to_owned())
    }

    fn redirects(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<u32> {
        Ok(self.table.get(&r)?.redirects)
    }

    fn drop(&mut self, r: Resource<HttpResponse>) -> wasmtime::Result<()> {
        // Dropping the response returns its body buffer to the pool.
        self.table.delete(r)?;
        Ok(())
    }
}
