//! HTTP through the engine's instrumented client.
//!
//! Every request is timed at the socket and recorded in the built-in
//! `http_req_*` metrics by the engine. Network errors do not return `Err`:
//! the response has status 0 and [`Response::error`] says what happened,
//! as in k6, so a load test keeps going when the target misbehaves.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Result;
use crate::bindings::wload::test::http as wit;

pub use wit::BodyMode;

/// Per-phase timings of one request (see `wit/test.wit` for each phase).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    pub blocked: Duration,
    pub connecting: Duration,
    pub tls_handshaking: Duration,
    pub sending: Duration,
    pub waiting: Duration,
    pub receiving: Duration,
    pub duration: Duration,
}

impl From<wit::Timings> for Timings {
    fn from(t: wit::Timings) -> Self {
        Timings {
            blocked: Duration::from_nanos(t.blocked),
            connecting: Duration::from_nanos(t.connecting),
            tls_handshaking: Duration::from_nanos(t.tls_handshaking),
            sending: Duration::from_nanos(t.sending),
            waiting: Duration::from_nanos(t.waiting),
            receiving: Duration::from_nanos(t.receiving),
            duration: Duration::from_nanos(t.duration),
        }
    }
}

/// A response. The body stays in the engine until [`Response::body`],
/// [`Response::text`] or [`Response::json`] copies it in; dropping the
/// response releases the engine's buffer.
pub struct Response(wit::Response);

impl Response {
    /// HTTP status, 0 when the request failed before a response arrived.
    pub fn status(&self) -> u16 {
        self.0.status()
    }
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<String> {
        self.0.header(name)
    }
    /// All headers, names in lower case.
    pub fn headers(&self) -> Vec<(String, String)> {
        self.0.headers()
    }
    /// Where the time went.
    pub fn timings(&self) -> Timings {
        self.0.timings().into()
    }
    /// The network error or timeout, when there was one.
    pub fn error(&self) -> Option<String> {
        self.0.error()
    }
    /// k6-compatible error code, 0 when none.
    pub fn error_code(&self) -> u32 {
        self.0.error_code()
    }
    /// Body length in bytes, known even when the body was discarded.
    pub fn body_len(&self) -> u64 {
        self.0.body_len()
    }
    /// The body bytes.
    pub fn body(&self) -> Vec<u8> {
        self.0.body()
    }
    /// The body as text (lossy UTF-8).
    pub fn text(&self) -> String {
        self.0.text()
    }
    /// The body parsed as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T> {
        Ok(serde_json::from_slice(&self.0.body())?)
    }
    /// The URL requested.
    pub fn url(&self) -> String {
        self.0.url()
    }
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response")
            .field("url", &self.url())
            .field("status", &self.status())
            .field("error", &self.error())
            .finish()
    }
}

/// A request being built: `Request::get(url).header("accept", "text/html").send()`.
#[derive(Debug, Clone)]
pub struct Request(wit::Request);

impl Request {
    /// A request with any method.
    pub fn new(method: &str, url: impl Into<String>) -> Self {
        Request(wit::Request {
            method: method.to_owned(),
            url: url.into(),
            headers: Vec::new(),
            body: None,
            tags: Vec::new(),
            name: None,
            timeout: None,
            body_mode: BodyMode::Keep,
        })
    }
    pub fn get(url: impl Into<String>) -> Self {
        Self::new("GET", url)
    }
    pub fn post(url: impl Into<String>) -> Self {
        Self::new("POST", url)
    }
    pub fn put(url: impl Into<String>) -> Self {
        Self::new("PUT", url)
    }
    pub fn patch(url: impl Into<String>) -> Self {
        Self::new("PATCH", url)
    }
    pub fn delete(url: impl Into<String>) -> Self {
        Self::new("DELETE", url)
    }
    pub fn head(url: impl Into<String>) -> Self {
        Self::new("HEAD", url)
    }

    /// Add a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.0.headers.push((name.to_owned(), value.to_owned()));
        self
    }
    /// Set the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.0.body = Some(body.into());
        self
    }
    /// Serialise `value` as the JSON body and set `content-type`.
    pub fn json<T: Serialize + ?Sized>(self, value: &T) -> Result<Self> {
        let body = serde_json::to_vec(value)?;
        Ok(self.header("content-type", "application/json").body(body))
    }
    /// Add a tag to every metric this request records.
    pub fn tag(mut self, key: &str, value: &str) -> Self {
        self.0.tags.push((key.to_owned(), value.to_owned()));
        self
    }
    /// Group dynamic URLs under one `name` tag (`/user/{id}`).
    pub fn name(mut self, name: &str) -> Self {
        self.0.name = Some(name.to_owned());
        self
    }
    /// Give up after `timeout` (default 60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.0.timeout = Some(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
        self
    }
    /// Read and count the response body without keeping it.
    pub fn discard_body(mut self) -> Self {
        self.0.body_mode = BodyMode::Discard;
        self
    }
    /// Send the request and wait for the whole response.
    pub fn send(self) -> Response {
        Response(wit::send(&self.0))
    }
}

/// `GET url`.
pub fn get(url: &str) -> Response {
    Request::get(url).send()
}

/// `POST url` with `body`.
pub fn post(url: &str, body: impl Into<Vec<u8>>) -> Response {
    Request::post(url).body(body).send()
}

/// Send `requests` in parallel; responses come back in the same order.
pub fn batch(requests: Vec<Request>) -> Vec<Response> {
    let reqs: Vec<wit::Request> = requests.into_iter().map(|r| r.0).collect();
    wit::batch(&reqs).into_iter().map(Response).collect()
}

pub(crate) fn owned_fields(fields: &[(&str, &str)]) -> Vec<(String, String)> {
    fields
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
