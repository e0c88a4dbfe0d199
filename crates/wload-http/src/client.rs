//! The client: its run-wide settings, redirects and cookies around each
//! exchange, and batches.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use http::header::HeaderValue;
use tokio::sync::Semaphore;
use tokio_rustls::TlsConnector;

use super::dns::Resolver;
use super::egress::EgressPolicy;
use super::error::{ErrorCode, HttpError};
use super::pool::BodyPool;
use super::redirect;
use super::source::LocalIps;
use super::tls::{TlsOptions, client_config};
use super::vu::VuConnections;
use super::{BodyMode, HttpResponse};

/// Client-wide settings (k6's options of the same names).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Per-request timeout when the request sets none (k6: 60 s).
    pub timeout: Duration,
    /// Sent when the request has no `user-agent` header.
    pub user_agent: String,
    /// Requests of one batch in flight at once (k6's `batch`).
    pub batch: usize,
    /// Requests of one batch in flight to one host (k6's `batchPerHost`).
    pub batch_per_host: usize,
    /// Redirects followed when the request sets no limit (k6's `maxRedirects`).
    pub max_redirects: u32,
    pub tls: TlsOptions,
    /// Offer HTTP/2 by ALPN on TLS connections.
    pub http2: bool,
    /// Speak HTTP/2 with prior knowledge on `http://` URLs (h2c).
    pub h2c: bool,
    /// How long a DNS answer is reused; zero resolves every new connection.
    pub dns_ttl: Duration,
    /// Close every connection after one request (k6's `noConnectionReuse`).
    pub no_connection_reuse: bool,
    /// Close a VU's connections between iterations (`noVUConnectionReuse`).
    pub no_vu_connection_reuse: bool,
    /// Discard bodies unless a request asks to keep them
    /// (`discardResponseBodies`).
    pub discard_bodies: bool,
    /// Statuses that count as expected in `http_req_failed`, as inclusive
    /// ranges (default 200-399).
    pub expected_statuses: Vec<(u16, u16)>,
    /// Largest response body kept, in bytes, on the wire and again once
    /// decoded (`maxResponseBodySize`, [`DEFAULT_MAX_BODY_SIZE`]).
    pub max_body_size: u64,
    /// Where connections may go (`None`: anywhere, no check at all);
    /// checked only when a connection is opened.
    pub egress: Option<Arc<EgressPolicy>>,
    /// The source addresses handed out to VUs (k6's `--local-ips`; `None`:
    /// the kernel picks), see [`crate::source`].
    pub local_ips: Option<Arc<LocalIps>>,
}

/// The default `maxResponseBodySize`: what no test of an API needs more
/// of, and what bounds a VU's memory when a server sends without end.
pub const DEFAULT_MAX_BODY_SIZE: u64 = 64 << 20;

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            timeout: Duration::from_secs(60),
            user_agent: format!("wload/{}", env!("CARGO_PKG_VERSION")),
            batch: 20,
            batch_per_host: 6,
            max_redirects: 10,
            tls: TlsOptions::default(),
            http2: true,
            h2c: false,
            dns_ttl: Duration::from_secs(300),
            no_connection_reuse: false,
            no_vu_connection_reuse: false,
            discard_bodies: false,
            expected_statuses: vec![(200, 399)],
            max_body_size: DEFAULT_MAX_BODY_SIZE,
            egress: None,
            local_ips: None,
        }
    }
}

/// One request as the host hands it over.
#[derive(Debug, Clone, Default)]
pub struct RequestSpec {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// Shared, so that redirect hops resend it without a copy.
    pub body: Option<bytes::Bytes>,
    pub timeout: Option<Duration>,
    /// `None`: the run's default (keep, or discard with `discard_bodies`).
    pub body_mode: Option<BodyMode>,
    /// `None`: the run's `max_redirects`.
    pub max_redirects: Option<u32>,
    /// `None`: the run's expected statuses.
    pub expected_statuses: Option<Vec<(u16, u16)>>,
    /// `None`: the run's `max_body_size`.
    pub max_body_size: Option<u64>,
}

/// The client shared by all VUs of a run.
pub struct Client {
    pub(super) config: ClientConfig,
    pub(super) pool: Arc<BodyPool>,
    pub(super) user_agent: HeaderValue,
    pub(super) resolver: Arc<Resolver>,
    pub(super) tls: TlsConnector,
}

impl Client {
    /// A client; fails when TLS files named in the config cannot be used.
    pub fn new(config: ClientConfig, pool: Arc<BodyPool>) -> Result<Client> {
        let user_agent = HeaderValue::from_str(&config.user_agent)
            .unwrap_or_else(|_| HeaderValue::from_static("wload"));
        let tls = TlsConnector::from(client_config(&config.tls, config.http2)?);
        Ok(Client {
            resolver: Arc::new(Resolver::new(config.dns_ttl)),
            config,
            pool,
            user_agent,
            tls,
        })
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Send one request, following redirects, on `conns`' connections (or
    /// new ones), and read the whole response. Never fails: errors are in
    /// the response. Each redirect hop is in [`HttpResponse::hops`].
    pub async fn send(&self, conns: &VuConnections, mut spec: RequestSpec) -> HttpResponse {
        let mut out = super::empty_response("", "");
        self.send_into(conns, &mut spec, &mut out).await;
        out
    }

    /// [`Client::send`] into `out`, a fresh [`HttpResponse`] of the caller:
    /// the response is filled in where it will stay instead of being moved
    /// up through every frame of the request path. `spec` is the caller's
    /// too: if the future is dropped midway (the test's end), `spec.url`
    /// and `spec.method` are those of the hop in flight, and `out` has
    /// what [`super::interrupted`] needs; once done, the response has
    /// taken them.
    pub async fn send_into(
        &self,
        conns: &VuConnections,
        spec: &mut RequestSpec,
        out: &mut HttpResponse,
    ) {
        self.follow_redirects(conns, spec, None, out).await
    }

    /// Send hop after hop while the responses redirect (up to the
    /// request's or the client's limit), keeping every hop's response;
    /// the first hop holds `gate` while it connects.
    async fn follow_redirects(
        &self,
        conns: &VuConnections,
        spec: &mut RequestSpec,
        mut gate: Option<Arc<tokio::sync::Mutex<()>>>,
        resp: &mut HttpResponse,
    ) {
        let max = spec.max_redirects.unwrap_or(self.config.max_redirects);
        let mut hops = Vec::new();
        loop {
            let target = match conns.target(&spec.url) {
                Ok(t) => t,
                Err(e) => {
                    *resp = super::failed(&spec.method, &spec.url, e);
                    self.finish(spec, resp, hops);
                    return;
                }
            };
            self.hop(conns, &target, spec, gate.take(), resp).await;
            let next = (resp.error.is_none()
                && redirect::is_redirect(resp.status)
                && (hops.len() as u32) < max)
                .then(|| std::str::from_utf8(resp.headers.get("location")?).ok())
                .flatten()
                .and_then(|loc| redirect::resolve(&spec.url, loc));
            match next {
                Some(url) => {
                    let mut hop = std::mem::replace(resp, super::empty_response("", ""));
                    hop.method = spec.method.clone();
                    hop.url = std::mem::replace(&mut spec.url, url);
                    if !redirect::keeps_method(hop.status, &spec.method) {
                        spec.method = "GET".to_owned();
                        spec.body = None;
                        spec.headers.retain(|(k, _)| {
                            !k.eq_ignore_ascii_case("content-type")
                                && !k.eq_ignore_ascii_case("content-length")
                        });
                    }
                    if !redirect::keeps_credentials(&hop.url, &spec.url) {
                        redirect::drop_credentials(&mut spec.headers);
                    }
                    hop.body = None;
                    self.finish_hop(spec, &mut hop);
                    hops.push(hop);
                }
                None => {
                    resp.method = std::mem::take(&mut spec.method);
                    resp.url = std::mem::take(&mut spec.url);
                    self.finish(spec, resp, hops);
                    return;
                }
            }
        }
    }

    fn finish_hop(&self, spec: &RequestSpec, resp: &mut HttpResponse) {
        let ranges = spec
            .expected_statuses
            .as_deref()
            .unwrap_or(&self.config.expected_statuses);
        // A response whose body could not be had (past its limit, or not
        // decodable) failed, whatever its status.
        resp.expected = resp.status != 0
            && resp.error.is_none()
            && ranges
                .iter()
                .any(|&(lo, hi)| (lo..=hi).contains(&resp.status));
    }

    fn finish(&self, spec: &RequestSpec, resp: &mut HttpResponse, hops: Vec<HttpResponse>) {
        self.finish_hop(spec, resp);
        resp.hops = hops;
    }

    /// Send `specs` in parallel, at most `batch` at once and
    /// `batch_per_host` per host, reusing and adding connections of this
    /// VU. Responses are in the order of `specs`.
    pub async fn batch(
        self: &Arc<Self>,
        conns: &VuConnections,
        specs: Vec<RequestSpec>,
    ) -> Vec<HttpResponse> {
        let all = Arc::new(Semaphore::new(self.config.batch.max(1)));
        let mut per_host: HashMap<String, Arc<Semaphore>> = HashMap::new();
        let mut tasks = tokio::task::JoinSet::new();
        let mut out: Vec<Option<HttpResponse>> = Vec::with_capacity(specs.len());
        for (i, spec) in specs.into_iter().enumerate() {
            out.push(None);
            let key = match conns.target(&spec.url) {
                Ok(t) => t.key.clone(),
                Err(e) => {
                    let mut resp = super::failed(&spec.method, &spec.url, e);
                    self.finish(&spec, &mut resp, Vec::new());
                    out[i] = Some(resp);
                    continue;
                }
            };
            let host_sem = per_host
                .entry(key.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(self.config.batch_per_host.max(1))))
                .clone();
            let (client, conns, all) = (self.clone(), conns.clone(), all.clone());
            tasks.spawn(async move {
                let _all = all.acquire_owned().await;
                let _host = host_sem.acquire_owned().await;
                let resp = crate::boxed_in_place(|| client.send_batched(&conns, &key, spec)).await;
                (i, resp)
            });
        }
        while let Some(done) = tasks.join_next().await {
            if let Ok((i, resp)) = done {
                out[i] = Some(resp);
            }
        }
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    super::failed(
                        "",
                        "",
                        HttpError::new(ErrorCode::Generic, "batch request task failed"),
                    )
                })
            })
            .collect()
    }

    /// A batch member: like [`Client::send`], but the first hop waits at
    /// the origin's gate while another task opens a connection that may be
    /// HTTP/2 and so carry this request too.
    async fn send_batched(
        &self,
        conns: &VuConnections,
        key: &str,
        mut spec: RequestSpec,
    ) -> HttpResponse {
        let may_share = self.config.http2 && !self.config.no_connection_reuse;
        let multiplexed = key.starts_with("https://") || self.config.h2c;
        let gate = (may_share && multiplexed)
            .then(|| conns.gate(key))
            .flatten();
        let mut out = super::empty_response("", "");
        self.follow_redirects(conns, &mut spec, gate, &mut out)
            .await;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The host boxes this future once per request (docs/architecture.md):
    /// its size is memory copied and allocated per request. It was 2,168
    /// bytes at 348fd3e and 1,856 after the crate split and the request
    /// path's reshaping (docs/BENCHMARKS.md, "Crate layout"); this keeps a
    /// change from growing it unnoticed. Prints the size: `cargo test
    /// --release -p wload-http request_future -- --nocapture`.
    #[test]
    fn the_request_future_stays_small() {
        let client = Client::new(ClientConfig::default(), BodyPool::new(1)).unwrap();
        let conns = VuConnections::default();
        let mut out = super::super::empty_response("", "");
        let mut spec = RequestSpec::default();
        let size = std::mem::size_of_val(&client.send_into(&conns, &mut spec, &mut out));
        eprintln!("Client::send_into's future: {size} bytes");
        assert!(size <= 2048, "the request future grew to {size} bytes");
    }

    /// A server on loopback that reads one request head, then writes
    /// `head` and keeps writing `drip` every 10 ms (or closes at once when
    /// `drip` is empty).
    async fn dripping(head: &'static [u8], drip: &'static [u8]) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = sock.read(&mut buf).await;
            let _ = sock.write_all(head).await;
            while !drip.is_empty() && sock.write_all(drip).await.is_ok() {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        });
        format!("http://{addr}/")
    }

    fn adds_up(r: &HttpResponse) -> bool {
        let t = r.timings;
        t.sending + t.waiting + t.receiving == t.duration
    }

    /// A request that fails or times out midway keeps the bytes it read,
    /// its phases add up to its duration, and its error names the phase
    /// (a timed-out one recorded 0 bytes, a cut one put its whole
    /// duration in `sending`).
    #[tokio::test]
    async fn failed_requests_keep_their_bytes_and_phases() {
        let client = Client::new(ClientConfig::default(), BodyPool::new(4)).unwrap();
        let conns = VuConnections::default();
        let url = dripping(b"HTTP/1.1 200 OK\r\ncontent-length: 10000000\r\n\r\n", b"x").await;
        let spec = RequestSpec {
            method: "GET".into(),
            url,
            timeout: Some(std::time::Duration::from_millis(400)),
            ..RequestSpec::default()
        };
        let r = client.send(&conns, spec).await;
        assert_eq!(r.error_code(), ErrorCode::RequestTimeout as u32);
        assert!(r.bytes_received > 40, "{}", r.bytes_received);
        assert!(adds_up(&r), "{:?}", r.timings);
        assert!(r.timings.receiving > r.timings.sending);
        let message = &r.error.as_ref().unwrap().message;
        assert!(message.contains("while receiving"), "{message}");

        let url = dripping(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf", b"").await;
        let spec = RequestSpec {
            method: "GET".into(),
            url,
            ..RequestSpec::default()
        };
        let r = client.send(&conns, spec).await;
        assert_eq!(r.error_code(), ErrorCode::ConnectionReset as u32);
        assert!(r.bytes_received > 40);
        assert!(adds_up(&r), "{:?}", r.timings);
        assert!(r.timings.sending < r.timings.duration, "{:?}", r.timings);
    }

    /// A server on `ip` that answers every request with `reply` and sends
    /// each request head it read down the returned channel.
    async fn recording(
        ip: &str,
        reply: String,
    ) -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let (tx, reply) = (tx.clone(), reply.clone());
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    let mut buf = [0u8; 4096];
                    loop {
                        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                            match sock.read(&mut buf).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => seen.extend_from_slice(&buf[..n]),
                            }
                        }
                        let _ = tx.send(String::from_utf8_lossy(&seen).to_lowercase());
                        seen.clear();
                        if sock.write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (format!("http://{addr}"), rx)
    }

    /// A redirect to another host (127.0.0.2: still loopback) drops the
    /// test's Authorization and Cookie; one to the same host keeps them.
    /// Before, `spec.headers` went along on every hop.
    #[tokio::test]
    async fn credentials_do_not_follow_a_redirect_to_another_host() {
        let ok = "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_owned();
        let (other, mut other_saw) = recording("127.0.0.2", ok.clone()).await;
        let (same, mut same_saw) = recording("127.0.0.1", ok).await;
        let to = |url: String| {
            format!("HTTP/1.1 302 Found\r\nlocation: {url}/landed\r\ncontent-length: 0\r\n\r\n")
        };
        let (away, _) = recording("127.0.0.1", to(other)).await;
        let (home, _) = recording("127.0.0.1", to(same)).await;
        let client = Client::new(ClientConfig::default(), BodyPool::new(4)).unwrap();
        let conns = VuConnections::default();
        let with_credentials = |url: String| RequestSpec {
            method: "GET".into(),
            url,
            headers: vec![
                ("Authorization".into(), "Bearer secret".into()),
                ("Cookie".into(), "session=secret".into()),
                ("X-Trace".into(), "kept".into()),
            ],
            ..RequestSpec::default()
        };
        let r = client.send(&conns, with_credentials(away)).await;
        assert_eq!((r.status, r.hops.len()), (200, 1));
        let seen = other_saw.recv().await.unwrap();
        assert!(!seen.contains("secret"), "{seen}");
        assert!(seen.contains("x-trace: kept"), "{seen}");
        let r = client.send(&conns, with_credentials(home)).await;
        assert_eq!(r.status, 200);
        let seen = same_saw.recv().await.unwrap();
        assert!(seen.contains("authorization: bearer secret"), "{seen}");
        assert!(seen.contains("session=secret"), "{seen}");
    }
}
