//! The instrumented HTTP client every VU shares.
//!
//! tokio sockets; HTTP/1.1 by our own client ([`h1`]), polled in the VU's
//! task; HTTP/2 by hyper when TLS's ALPN picks it (or with prior
//! knowledge, h2c); TLS by rustls. Each VU owns its keep-alive
//! connections and its cookie jar ([`VuConnections`]), so N VUs open about
//! N connections to a host, as in k6. Each connection's socket is wrapped
//! in a [`socket::MeteredIo`] that timestamps the last byte written and the first byte read, which is how
//! `sending`, `waiting` and `receiving` are measured at the socket rather
//! than around hyper's futures. Bodies land in pooled buffers
//! ([`pool::BodyPool`]) or are counted and dropped in discard mode.
//!
//! Nothing here knows about wasm or metrics (this crate depends on
//! neither): the engine's host turns guest requests into [`RequestSpec`]s,
//! hands [`HttpResponse`]s back as resources and records them, redirect
//! hops and timings included, into the metrics.

mod client;
mod conn;
mod cookies;
mod decode;
mod dns;
pub mod egress;
mod error;
mod exchange;
#[doc(hidden)]
pub mod fuzzing;
mod h1;
mod headers;
mod pool;
mod redirect;
mod socket;
pub mod source;
mod target;
mod tls;
mod vu;

pub use client::{Client, ClientConfig, DEFAULT_MAX_BODY_SIZE, RequestSpec};
pub use cookies::{CookieJar, StoredCookie};
pub use egress::EgressPolicy;
pub use error::{ErrorCode, HttpError};
pub use headers::Headers;
pub use pool::{BodyPool, PooledBuf};
pub use source::LocalIps;
pub use tls::{TlsOptions, client_config as tls_client_config};
pub use vu::VuConnections;

/// The future `make` builds, boxed where it is built: for the futures
/// boxed once per request (the engine's request, an HTTP/2 exchange, a
/// batched request). `Box::pin(fut)` builds the future on the stack,
/// allocates, and copies it over, a memcpy of the future's whole size per
/// request; allocating first and writing the future into the allocation
/// lets the compiler build it there (docs/BENCHMARKS.md, Session 14:
/// memcpy 1,387 → 1,168 instructions per hello iteration at 100 VUs).
#[inline(always)]
pub fn boxed_in_place<F: std::future::Future>(make: impl FnOnce() -> F) -> std::pin::Pin<Box<F>> {
    let slot = Box::<F>::new_uninit();
    Box::into_pin(Box::write(slot, make()))
}

/// Per-phase timings in nanoseconds (see `wit/test.wit`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timings {
    pub blocked: u64,
    pub connecting: u64,
    pub tls_handshaking: u64,
    pub sending: u64,
    pub waiting: u64,
    pub receiving: u64,
    pub duration: u64,
}

/// What to do with a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BodyMode {
    #[default]
    Keep,
    Discard,
}

/// One finished request: a response, or the error that replaced it.
#[derive(Debug)]
pub struct HttpResponse {
    /// 0 when no response arrived.
    pub status: u16,
    pub headers: Headers,
    pub timings: Timings,
    pub error: Option<HttpError>,
    /// The body, unless discarded or failed.
    pub body: Option<PooledBuf>,
    /// Body length, counted in both modes.
    pub body_len: u64,
    pub url: String,
    pub method: String,
    /// Bytes written to / read from the socket for this request (on the
    /// wire: TLS records, compressed bodies).
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// `HTTP/1.1` or `HTTP/2.0` once a connection was had.
    pub proto: Option<&'static str>,
    /// `tls1.2` or `tls1.3` on TLS connections.
    pub tls_version: Option<&'static str>,
    /// Whether the status counts as expected for `http_req_failed`.
    pub expected: bool,
    /// The redirect responses that led here, in order; each is recorded
    /// as a request of its own.
    pub hops: Vec<HttpResponse>,
    /// How many redirects led here, once `hops` were recorded.
    pub redirects: u32,
    /// How far the request got, while it is in flight.
    pub(crate) in_flight: InFlight,
}

/// How far a request has got, kept in its response while it is in flight:
/// a request cut midway (by its timeout, or by the end of the test) is
/// recorded with the bytes it moved and the phase it was in, though the
/// future that was sending it is gone.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    /// `now_ns` when the request began (before any connection).
    pub started: u64,
    /// The connection's marks once it has one, and when sending began.
    pub marks: Option<std::sync::Arc<socket::IoMarks>>,
    pub send_start: u64,
}

impl HttpResponse {
    /// The k6 error code: the network error's, else 1000 + status for
    /// 4xx/5xx, else 0.
    pub fn error_code(&self) -> u32 {
        match &self.error {
            Some(e) => e.code as u32,
            None if self.status >= 400 => 1000 + u32::from(self.status),
            None => 0,
        }
    }

    pub fn body_bytes(&self) -> &[u8] {
        self.body.as_ref().map(|b| b.as_slice()).unwrap_or_default()
    }
}

/// A response with nothing in it yet, to be filled in by the client.
#[inline]
pub fn empty_response(method: &str, url: &str) -> HttpResponse {
    HttpResponse {
        status: 0,
        headers: Default::default(),
        timings: Timings::default(),
        error: None,
        body: None,
        body_len: 0,
        url: url.to_owned(),
        method: method.to_owned(),
        bytes_sent: 0,
        bytes_received: 0,
        proto: None,
        tls_version: None,
        expected: false,
        hops: Vec::new(),
        redirects: 0,
        in_flight: InFlight::default(),
    }
}

/// A request that failed before it had a response: only its error.
pub fn failed(method: &str, url: &str, error: HttpError) -> HttpResponse {
    HttpResponse {
        error: Some(error),
        ..empty_response(method, url)
    }
}

/// A request the test's end cut before its response was whole (the
/// future sending it was dropped): [`ErrorCode::Interrupted`], with the
/// bytes it moved and the phase it was cut in.
pub fn interrupted(resp: &mut HttpResponse) {
    exchange::cut(
        resp,
        HttpError::new(
            ErrorCode::Interrupted,
            "request interrupted by the end of the test",
        ),
    );
}
