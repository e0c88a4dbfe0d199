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

/// Why a request failed (its [`ErrorKind`]) and what the engine saw.
pub use wit::{ErrorKind, HttpError};

impl ErrorKind {
    /// k6's error code of this kind (`res.error_code` in k6).
    pub fn code(self) -> u32 {
        match self {
            ErrorKind::Generic => 1000,
            ErrorKind::InvalidUrl => 1020,
            ErrorKind::Timeout => 1050,
            ErrorKind::BodyTooLarge => 1060,
            ErrorKind::Interrupted => 1070,
            ErrorKind::Dns => 1100,
            ErrorKind::NoIp => 1101,
            ErrorKind::BlockedIp => 1110,
            ErrorKind::BlockedHostname => 1111,
            ErrorKind::Tcp => 1200,
            ErrorKind::BrokenPipe => 1201,
            ErrorKind::Dial => 1210,
            ErrorKind::DialTimeout => 1211,
            ErrorKind::ConnectionRefused => 1212,
            ErrorKind::ConnectionReset => 1220,
            ErrorKind::Tls => 1300,
            ErrorKind::TlsUnknownAuthority => 1310,
            ErrorKind::TlsHostname => 1311,
            ErrorKind::Http2 => 1600,
            ErrorKind::Http2Goaway => 1610,
            ErrorKind::Http2Stream => 1630,
            ErrorKind::Http2Connection => 1650,
            ErrorKind::Decompression => 1701,
            ErrorKind::DecodedTooLarge => 1702,
        }
    }
}

/// A response. The body stays in the engine until [`Response::body`],
/// [`Response::text`] or [`Response::json`] copies it in; dropping the
/// response releases the engine's buffer. Its status, error and body
/// length came with it: reading them costs no call to the engine.
pub struct Response {
    status: u16,
    error: Option<HttpError>,
    body_len: u64,
    handle: wit::Response,
}

impl From<wit::Sent> for Response {
    fn from(sent: wit::Sent) -> Self {
        Response {
            status: sent.status,
            error: sent.error,
            body_len: sent.body_len,
            handle: sent.response,
        }
    }
}

impl Response {
    /// HTTP status, 0 when the request failed before a response arrived.
    pub fn status(&self) -> u16 {
        self.status
    }
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<String> {
        self.handle.header(name)
    }
    /// All headers, names in lower case, repeated fields included.
    pub fn headers(&self) -> Vec<(String, String)> {
        self.handle.headers()
    }
    /// Where the time went.
    pub fn timings(&self) -> Timings {
        self.handle.timings().into()
    }
    /// The network error or timeout, when there was one.
    pub fn error(&self) -> Option<String> {
        self.error.as_ref().map(|e| e.message.clone())
    }
    /// What kind of failure [`Response::error`] was.
    pub fn error_kind(&self) -> Option<ErrorKind> {
        self.error.as_ref().map(|e| e.kind)
    }
    /// k6-compatible error code: the failure's ([`ErrorKind::code`]),
    /// else 1000 + status for a 4xx/5xx response, else 0.
    pub fn error_code(&self) -> u32 {
        match &self.error {
            Some(e) => e.kind.code(),
            None if self.status >= 400 => 1000 + u32::from(self.status),
            None => 0,
        }
    }
    /// Body length in bytes, known even when the body was discarded.
    pub fn body_len(&self) -> u64 {
        self.body_len
    }
    /// The body bytes.
    pub fn body(&self) -> Vec<u8> {
        self.handle.body()
    }
    /// The body as text (lossy UTF-8).
    pub fn text(&self) -> String {
        self.handle.text()
    }
    /// The body parsed as JSON.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T> {
        Ok(serde_json::from_slice(&self.handle.body())?)
    }
    /// The URL of this response (after redirects, the last one).
    pub fn url(&self) -> String {
        self.handle.url()
    }
    /// `HTTP/1.1` or `HTTP/2.0`; empty when no connection was made.
    pub fn proto(&self) -> String {
        self.handle.proto()
    }
    /// `tls1.2` or `tls1.3` over https, empty otherwise.
    pub fn tls_version(&self) -> String {
        self.handle.tls_version()
    }
    /// How many redirects were followed to get this response.
    pub fn redirects(&self) -> u32 {
        self.handle.redirects()
    }
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response")
            .field("url", &self.url())
            .field("status", &self.status)
            .field("error", &self.error)
            .finish()
    }
}

/// A request being built: `Request::get(url).header("accept", "text/html").send()`.
#[derive(Debug, Clone)]
pub struct Request {
    req: wit::Request,
    opts: wit::RequestOptions,
}

impl Request {
    /// A request with any method.
    pub fn new(method: &str, url: impl Into<String>) -> Self {
        Request {
            req: wit::Request {
                method: method.to_owned(),
                url: url.into(),
                headers: Vec::new(),
                body: None,
                tags: Vec::new(),
                name: None,
            },
            opts: wit::RequestOptions {
                timeout: None,
                max_redirects: None,
                expected_statuses: None,
                body_mode: None,
                max_body_size: None,
            },
        }
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
        self.req.headers.push((name.to_owned(), value.to_owned()));
        self
    }
    /// Append `key=value` to the URL's query string, percent-encoded.
    pub fn query(mut self, key: &str, value: &str) -> Self {
        let sep = if self.req.url.contains('?') { '&' } else { '?' };
        self.req.url.push(sep);
        self.req.url.push_str(&encode_component(key));
        self.req.url.push('=');
        self.req.url.push_str(&encode_component(value));
        self
    }
    /// Set the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.req.body = Some(body.into());
        self
    }
    /// Serialise `value` as the JSON body and set `content-type`.
    pub fn json<T: Serialize + ?Sized>(self, value: &T) -> Result<Self> {
        let body = serde_json::to_vec(value)?;
        Ok(self.header("content-type", "application/json").body(body))
    }
    /// An `application/x-www-form-urlencoded` body of `fields`.
    pub fn form(self, fields: &[(&str, &str)]) -> Self {
        let body = form_encode(fields);
        self.header("content-type", "application/x-www-form-urlencoded")
            .body(body)
    }
    /// A `multipart/form-data` body.
    pub fn multipart(self, form: Multipart) -> Self {
        let (content_type, body) = form.finish();
        self.header("content-type", &content_type).body(body)
    }
    /// Add a tag to every metric this request records.
    pub fn tag(mut self, key: &str, value: &str) -> Self {
        self.req.tags.push((key.to_owned(), value.to_owned()));
        self
    }
    /// Group dynamic URLs under one `name` tag (`/user/{id}`).
    pub fn name(mut self, name: &str) -> Self {
        self.req.name = Some(name.to_owned());
        self
    }
    /// Give up after `timeout` (default 60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.opts.timeout = Some(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
        self
    }
    /// Read and count the response body without keeping it.
    pub fn discard_body(mut self) -> Self {
        self.opts.body_mode = Some(BodyMode::Discard);
        self
    }
    /// Keep the response body even when the run discards bodies
    /// (`--discard-response-bodies`).
    pub fn keep_body(mut self) -> Self {
        self.opts.body_mode = Some(BodyMode::Keep);
        self
    }
    /// Follow at most `n` redirects (0: return the 3xx response itself).
    pub fn max_redirects(mut self, n: u32) -> Self {
        self.opts.max_redirects = Some(n);
        self
    }
    /// Statuses (inclusive ranges) that count as expected for
    /// `http_req_failed`: `.expected_statuses(&[(200, 299), (404, 404)])`.
    pub fn expected_statuses(mut self, ranges: &[(u16, u16)]) -> Self {
        self.opts.expected_statuses = Some(
            ranges
                .iter()
                .map(|&(min, max)| wit::StatusRange { min, max })
                .collect(),
        );
        self
    }
    /// Keep at most `bytes` of the response body, on the wire and once
    /// decoded (the run's default: `--max-response-body-size`, 64 MiB).
    /// Past it the request fails with [`ErrorKind::BodyTooLarge`]
    /// ([`ErrorKind::DecodedTooLarge`] once decoded).
    pub fn max_body_size(mut self, bytes: u64) -> Self {
        self.opts.max_body_size = Some(bytes);
        self
    }
    /// Send the request and wait for the whole response.
    pub fn send(self) -> Response {
        wit::send(&self.req, &self.opts).into()
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
/// The run's `--batch` and `--batch-per-host` bound how many are in
/// flight.
pub fn batch(requests: Vec<Request>) -> Vec<Response> {
    let reqs: Vec<(wit::Request, wit::RequestOptions)> =
        requests.into_iter().map(|r| (r.req, r.opts)).collect();
    wit::batch(&reqs).into_iter().map(Response::from).collect()
}

/// The VU's cookies that a request to `url` would send, `(name, value)`.
/// The jar lasts the VU's whole run.
pub fn cookies(url: &str) -> Vec<(String, String)> {
    wit::cookies(url)
}

/// The value of the cookie `name` the VU would send to `url`.
pub fn cookie(url: &str, name: &str) -> Option<String> {
    cookies(url)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

/// Put a cookie in the VU's jar as if `url` had sent
/// `set-cookie: <cookie>`, e.g. `set_cookie(url, "session=abc; Path=/")`.
pub fn set_cookie(url: &str, cookie: &str) -> Result<()> {
    wit::set_cookie(url, cookie).map_err(Into::into)
}

/// Empty the VU's cookie jar.
pub fn clear_cookies() {
    wit::clear_cookies()
}

/// A `multipart/form-data` body: text fields and files.
#[derive(Debug, Clone, Default)]
pub struct Multipart {
    parts: Vec<Part>,
}

/// One field: its name, `(file name, content type)` for files, the data.
type Part = (String, Option<(String, String)>, Vec<u8>);

impl Multipart {
    pub fn new() -> Self {
        Self::default()
    }
    /// A text field.
    pub fn text(mut self, name: &str, value: &str) -> Self {
        self.parts
            .push((name.to_owned(), None, value.as_bytes().to_vec()));
        self
    }
    /// A file field with its file name and content type.
    pub fn file(
        mut self,
        name: &str,
        filename: &str,
        content_type: &str,
        data: impl Into<Vec<u8>>,
    ) -> Self {
        self.parts.push((
            name.to_owned(),
            Some((filename.to_owned(), content_type.to_owned())),
            data.into(),
        ));
        self
    }
    /// The `content-type` header value and the body.
    pub fn finish(self) -> (String, Vec<u8>) {
        // A boundary that the parts do not contain.
        let mut n: u64 = 0x5eed;
        let boundary = loop {
            let b = format!("wload-boundary-{n:016x}");
            if !self.parts.iter().any(|(_, _, d)| contains(d, b.as_bytes())) {
                break b;
            }
            n = n
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
        };
        let mut body = Vec::new();
        for (name, file, data) in &self.parts {
            body.extend_from_slice(format!("--{boundary}\r\n").as_bytes());
            let name = quote(name);
            match file {
                Some((filename, ct)) => body.extend_from_slice(
                    format!(
                        "content-disposition: form-data; name=\"{name}\"; filename=\"{}\"\r\ncontent-type: {ct}\r\n\r\n",
                        quote(filename)
                    )
                    .as_bytes(),
                ),
                None => body.extend_from_slice(
                    format!("content-disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
                ),
            }
            body.extend_from_slice(data);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        (format!("multipart/form-data; boundary={boundary}"), body)
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn quote(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Percent-encode everything but RFC 3986's unreserved characters.
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `k=v&k2=v2`, percent-encoded (spaces as `+`, as forms do).
pub fn form_encode(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                encode_component(k).replace("%20", "+"),
                encode_component(v).replace("%20", "+")
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}

pub(crate) fn owned_fields(fields: &[(&str, &str)]) -> Vec<(String, String)> {
    fields
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
