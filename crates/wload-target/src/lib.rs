//! A small, fast target server (hyper) with endpoints for load tests, and
//! counters of what it saw. Plain HTTP/1.1 by default; with a rustls
//! config it serves TLS and picks HTTP/1.1 or HTTP/2 by ALPN, and with
//! `h2c` it also accepts HTTP/2 with prior knowledge.
//!
//! - `GET /`: `hello` (5 bytes)
//! - `GET /bytes/N`: N deterministic bytes, with their SHA-256 in
//!   `x-sha256` so a client can check the body arrived intact
//! - `POST /echo`: the request body back, same content type
//! - `GET /status/N`: an empty response with status N
//! - `GET /delay/MS`: `hello` after MS milliseconds
//! - `GET /stall/PERIOD/LEN`: `hello`, except that the server stalls for
//!   the first LEN ms of every PERIOD ms (since it started): a request
//!   arriving then is answered when the stall ends
//! - `GET /redirect/N`: 302 to `/redirect/N-1`, and `/redirect/0` to `/`
//! - `GET /cookies/set?k=v&...`: sets those cookies, then 302 to `/cookies`
//! - `GET /cookies`: the request's `cookie` header as the body
//! - `GET /compressed/ALG`: a text body encoded with gzip, deflate or zstd
//! - `GET /proto`: the HTTP version of the request (`HTTP/2.0`, ...)
//! - `/session/...`: a bearer-token login API (see [`session`])
//! - `/items`, `/items/ID`: a JSON resource with POST, GET, PUT, DELETE
//!   ([`crud`])
//! - anything else: 404

pub mod counting;
pub mod crud;
pub mod session;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// What the server saw.
#[derive(Debug)]
pub struct ServerStats {
    started: Instant,
    /// Nanoseconds after `started` of the first and the last request.
    first_request: AtomicU64,
    last_request: AtomicU64,
    pub requests: AtomicU64,
    pub connections: AtomicU64,
    pub open_connections: AtomicU64,
    pub max_open_connections: AtomicU64,
    /// Requests being handled right now, and the most at once.
    pub in_flight: AtomicU64,
    pub max_in_flight: AtomicU64,
    pub sessions: session::SessionStats,
    /// The `/items` resource and what was done to it.
    pub items: crud::Items,
}

impl Default for ServerStats {
    fn default() -> Self {
        ServerStats {
            started: Instant::now(),
            first_request: AtomicU64::new(u64::MAX),
            last_request: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            open_connections: AtomicU64::new(0),
            max_open_connections: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            max_in_flight: AtomicU64::new(0),
            sessions: session::SessionStats::default(),
            items: crud::Items::default(),
        }
    }
}

impl ServerStats {
    fn note_request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let t = self.started.elapsed().as_nanos() as u64;
        self.first_request.fetch_min(t, Ordering::Relaxed);
        self.last_request.fetch_max(t, Ordering::Relaxed);
    }

    /// Time from the first request to the last one.
    pub fn request_span(&self) -> Duration {
        let (first, last) = (
            self.first_request.load(Ordering::Relaxed),
            self.last_request.load(Ordering::Relaxed),
        );
        Duration::from_nanos(last.saturating_sub(first))
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::Relaxed)
    }
    pub fn max_open_connections(&self) -> u64 {
        self.max_open_connections.load(Ordering::Relaxed)
    }
    pub fn max_in_flight(&self) -> u64 {
        self.max_in_flight.load(Ordering::Relaxed)
    }
}

/// How the server talks.
#[derive(Clone, Default)]
pub struct ServeOptions {
    /// Serve TLS with this config (its ALPN list decides HTTP/2).
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Accept HTTP/2 with prior knowledge on plain connections as well.
    pub h2c: bool,
}

/// A running server; stops when dropped.
pub struct TargetServer {
    pub addr: SocketAddr,
    pub stats: Arc<ServerStats>,
    stop: watch::Sender<bool>,
    scheme: &'static str,
}

impl TargetServer {
    /// Listen on `addr` (use port 0 for any free port) on the current
    /// tokio runtime.
    pub async fn start(addr: SocketAddr) -> Result<TargetServer> {
        TargetServer::start_with(addr, ServeOptions::default()).await
    }

    /// [`TargetServer::start`] with TLS and/or h2c.
    pub async fn start_with(addr: SocketAddr, opts: ServeOptions) -> Result<TargetServer> {
        let scheme = if opts.tls.is_some() { "https" } else { "http" };
        let listener = listen(addr).with_context(|| format!("cannot listen on {addr}"))?;
        let addr = listener.local_addr()?;
        let stats = Arc::new(ServerStats::default());
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(accept_loop(listener, stats.clone(), stopped, opts));
        Ok(TargetServer {
            addr,
            stats,
            stop,
            scheme,
        })
    }

    pub fn base_url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }
}

impl Drop for TargetServer {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

/// Thousands of VUs connect in the same few milliseconds at the start of
/// a run. tokio's `TcpListener::bind` asks for a backlog of 1,024: SYNs
/// past it are dropped and retried by the client 1 s and 3 s later, which
/// shows as seconds of `http_req_connecting` that are the target's, not
/// the generator's. Ask for the most the kernel gives
/// (`net.core.somaxconn` caps it: 4,096 by default).
const BACKLOG: u32 = 65_535;

fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As `TcpListener::bind` does: a restarted target may take its port
    // back while the last run's connections are in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

async fn accept_loop(
    listener: TcpListener,
    stats: Arc<ServerStats>,
    mut stopped: watch::Receiver<bool>,
    opts: ServeOptions,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped.wait_for(|s| *s) => return,
        };
        let Ok((stream, _)) = accepted else {
            // Out of file descriptors or similar: back off briefly.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        stats.connections.fetch_add(1, Ordering::Relaxed);
        let open = stats.open_connections.fetch_add(1, Ordering::Relaxed) + 1;
        stats
            .max_open_connections
            .fetch_max(open, Ordering::Relaxed);
        let (stats, mut stopped, opts) = (stats.clone(), stopped.clone(), opts.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = serve(stream, stats.clone(), opts) => {}
                _ = stopped.wait_for(|s| *s) => {}
            }
            stats.open_connections.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// Serve one connection: HTTP/1.1 on the fast path; TLS (ALPN) or h2c
/// through hyper-util's protocol detection.
async fn serve(stream: tokio::net::TcpStream, stats: Arc<ServerStats>, opts: ServeOptions) {
    let service = service_fn(move |req| handle(req, stats.clone()));
    match (opts.tls, opts.h2c) {
        (None, false) => {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        }
        (None, true) => {
            let _ = auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        }
        (Some(tls), _) => {
            let Ok(stream) = tokio_rustls::TlsAcceptor::from(tls).accept(stream).await else {
                return;
            };
            let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
            let builder = auto::Builder::new(TokioExecutor::new());
            let _ = if h2 {
                builder
                    .http2_only()
                    .serve_connection(TokioIo::new(stream), service)
                    .await
            } else {
                builder
                    .http1_only()
                    .serve_connection(TokioIo::new(stream), service)
                    .await
            };
        }
    }
}

/// The deterministic body of `/bytes/N`.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_mul(31).wrapping_add(7) % 251) as u8)
        .collect()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Largest body `/bytes/N` serves.
const MAX_BYTES: usize = 64 << 20;

async fn handle(
    req: Request<Incoming>,
    stats: Arc<ServerStats>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    stats.note_request();
    let now = stats.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
    stats.max_in_flight.fetch_max(now, Ordering::Relaxed);
    let resp = route(req, &stats).await;
    stats.in_flight.fetch_sub(1, Ordering::Relaxed);
    Ok(resp)
}

async fn route(req: Request<Incoming>, stats: &ServerStats) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    let mut parts = path.trim_start_matches('/').splitn(2, '/');
    match (parts.next().unwrap_or(""), parts.next()) {
        ("", None) => text(StatusCode::OK, "hello"),
        ("items", id) => {
            let method = req.method().clone();
            let body = req.into_body().collect().await.map(|b| b.to_bytes());
            stats.items.route(&method, id, &body.unwrap_or_default())
        }
        ("bytes", Some(n)) => match n.parse::<usize>() {
            Ok(n) if n <= MAX_BYTES => {
                let body = pattern(n);
                let sum = sha256_hex(&body);
                let mut r = Response::new(Full::new(Bytes::from(body)));
                r.headers_mut().insert(
                    "content-type",
                    http::HeaderValue::from_static("application/octet-stream"),
                );
                if let Ok(v) = http::HeaderValue::from_str(&sum) {
                    r.headers_mut().insert("x-sha256", v);
                }
                r
            }
            _ => text(
                StatusCode::BAD_REQUEST,
                "size must be a number up to 64 MiB",
            ),
        },
        ("echo", None) => {
            let content_type = req.headers().get("content-type").cloned();
            let body = match req.into_body().collect().await {
                Ok(b) => b.to_bytes(),
                Err(_) => Bytes::new(),
            };
            let mut r = Response::new(Full::new(body));
            if let Some(ct) = content_type {
                r.headers_mut().insert("content-type", ct);
            }
            r
        }
        ("status", Some(code)) => match code
            .parse::<u16>()
            .ok()
            .and_then(|c| StatusCode::from_u16(c).ok())
        {
            Some(status) => {
                let mut r = Response::new(Full::new(Bytes::new()));
                *r.status_mut() = status;
                r
            }
            None => text(StatusCode::BAD_REQUEST, "status must be 100-999"),
        },
        ("stall", Some(spec)) => match spec
            .split_once('/')
            .map(|(p, l)| (p.parse::<u64>(), l.parse::<u64>()))
        {
            Some((Ok(period), Ok(len))) if period > 0 && len <= period => {
                let phase = stats.started.elapsed().as_millis() as u64 % period;
                if phase < len {
                    tokio::time::sleep(Duration::from_millis(len - phase)).await;
                }
                text(StatusCode::OK, "hello")
            }
            _ => text(
                StatusCode::BAD_REQUEST,
                "use /stall/PERIOD_MS/LEN_MS with LEN ≤ PERIOD",
            ),
        },
        ("delay", Some(ms)) => match ms.parse::<u64>() {
            Ok(ms) => {
                tokio::time::sleep(Duration::from_millis(ms.min(600_000))).await;
                text(StatusCode::OK, "hello")
            }
            Err(_) => text(StatusCode::BAD_REQUEST, "delay must be milliseconds"),
        },
        ("redirect", Some(n)) => match n.parse::<u32>() {
            Ok(0) => redirect("/"),
            Ok(n) => redirect(&format!("/redirect/{}", n - 1)),
            Err(_) => text(StatusCode::BAD_REQUEST, "redirect count must be a number"),
        },
        ("cookies", Some("set")) => {
            let mut r = redirect("/cookies");
            for pair in req.uri().query().unwrap_or("").split('&') {
                if let Some((k, v)) = pair.split_once('=')
                    && let Ok(value) = http::HeaderValue::from_str(&format!("{k}={v}; Path=/"))
                {
                    r.headers_mut().append("set-cookie", value);
                }
            }
            r
        }
        ("cookies", None) => {
            let cookie = req
                .headers()
                .get("cookie")
                .map(|v| Bytes::copy_from_slice(v.as_bytes()))
                .unwrap_or_default();
            Response::new(Full::new(cookie))
        }
        ("compressed", Some(alg)) => match compress(alg, COMPRESSIBLE.as_bytes()) {
            Some(body) => {
                let mut r = Response::new(Full::new(Bytes::from(body)));
                if let Ok(v) = http::HeaderValue::from_str(alg) {
                    r.headers_mut().insert("content-encoding", v);
                }
                r
            }
            None => text(StatusCode::BAD_REQUEST, "use gzip, deflate or zstd"),
        },
        ("session", rest) => session::route(req, rest, &stats.sessions).await,
        ("proto", None) => {
            let version = format!("{:?}", req.version());
            Response::new(Full::new(Bytes::from(version)))
        }
        _ => text(StatusCode::NOT_FOUND, "not found"),
    }
}

/// The plain text of `/compressed/ALG`: repetitive, so it shrinks well.
pub const COMPRESSIBLE: &str = "wload compresses well. wload compresses well. wload compresses well. \
    wload compresses well. wload compresses well. wload compresses well.";

fn compress(alg: &str, data: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    let level = flate2::Compression::default();
    match alg {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
            e.write_all(data).ok()?;
            e.finish().ok()
        }
        "deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
            e.write_all(data).ok()?;
            e.finish().ok()
        }
        "zstd" => Some(ruzstd::encoding::compress_to_vec(
            data,
            ruzstd::encoding::CompressionLevel::Fastest,
        )),
        _ => None,
    }
}

fn redirect(location: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = StatusCode::FOUND;
    if let Ok(v) = http::HeaderValue::from_str(location) {
        r.headers_mut().insert("location", v);
    }
    r
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert("content-type", http::HeaderValue::from_static("text/plain"));
    r
}
