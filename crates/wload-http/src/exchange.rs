//! One hop of a request: its cookies, its timeout, and the exchange on a
//! connection (reused, or resolved, dialled and handshaken): writing the
//! request and reading the response into a pooled buffer.
//!
//! The request path, top down, each step named for what it adds:
//! [`Client::send_into`] (the entry point) → `follow_redirects` (the
//! redirect loop, in `client.rs`) → [`Client::hop`] (cookies, timeout,
//! keep-alive) → `exchange` (a connection, the one retry on a closed
//! one) → HTTP/1.1 or `exchange_h2` → [`h1::H1Conn::exchange`] (the
//! wire). The response is filled in where the caller keeps it, so it is
//! never moved up through these frames.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;
use http::Response;
use http::header::{AUTHORIZATION, COOKIE, HOST, HeaderName, HeaderValue, USER_AGENT};
use http::{Method, Version};
use http_body_util::{BodyExt, Full};

use super::client::{Client, RequestSpec};
use super::conn::{Conn, Handshake, Proto, Sender};
use super::decode::{self, DecodeError};
use super::dns::Resolver;
use super::egress::EgressPolicy;
use super::error::{ErrorCode, HttpError};
use super::h1;
use super::pool::PooledBuf;
use super::socket::{IoMarks, now_ns};
use super::source;
use super::target::Target;
use super::tls::server_name;
use super::vu::VuConnections;
use super::{BodyMode, Headers, HttpResponse, InFlight, Timings};

impl Client {
    /// One hop of a request to `target`: the cookies of the VU's jar go
    /// out with it, the exchange runs under the request's timeout, the
    /// connection goes back to `conns` when it can be reused, and the
    /// cookies the response sets go into the jar.
    pub(super) async fn hop(
        &self,
        conns: &VuConnections,
        target: &Target,
        spec: &RequestSpec,
        gate: Option<Arc<tokio::sync::Mutex<()>>>,
        resp: &mut HttpResponse,
    ) {
        let cookie = conns.with_jar(|jar| {
            (!jar.is_empty())
                .then(|| jar.header_for(target.tls, &target.host, target.path.path()))
                .flatten()
        });
        let timeout = spec.timeout.unwrap_or(self.config.timeout);
        // The caller, who owns the request, fills in its method and URL.
        let method = match check_request(spec) {
            Ok(m) => m,
            Err(e) => {
                resp.error = Some(e);
                return;
            }
        };
        let request = Request {
            spec,
            method: &method,
            cookie: cookie.as_deref(),
            mode: spec.body_mode.unwrap_or(if self.config.discard_bodies {
                BodyMode::Discard
            } else {
                BodyMode::Keep
            }),
            limit: spec.max_body_size.unwrap_or(self.config.max_body_size),
        };
        resp.in_flight = InFlight {
            started: now_ns(),
            ..InFlight::default()
        };
        match tokio::time::timeout(timeout, self.exchange(conns, target, gate, &request, resp))
            .await
        {
            Ok(Some(conn)) if !self.config.no_connection_reuse => conns.put(&target.key, conn),
            Ok(_) => {}
            // A connection with a request half done is dropped.
            Err(_) => cut(
                resp,
                HttpError::new(
                    ErrorCode::RequestTimeout,
                    format!(
                        "request timeout: no complete response within {:.3}s",
                        timeout.as_secs_f64()
                    ),
                ),
            ),
        }
        resp.in_flight.marks = None;
        if resp.headers.contains("set-cookie") {
            conns.with_jar(|jar| {
                for value in resp.headers.get_all("set-cookie") {
                    if let Ok(v) = std::str::from_utf8(value) {
                        jar.store_header(&target.host, target.path.path(), v);
                    }
                }
            });
        }
    }

    /// The request as hyper takes it, for HTTP/2 (HTTP/1.1 encodes the
    /// spec itself: [`h1::Outgoing`]).
    fn build(&self, target: &Target, req: &Request<'_>) -> http::Request<Full<Bytes>> {
        let spec = req.spec;
        let mut out = http::Request::new(Full::new(spec.body.clone().unwrap_or_default()));
        *out.method_mut() = req.method.clone();
        *out.uri_mut() = target.full.clone();
        let headers = out.headers_mut();
        // Checked by `check_request`: none of these conversions fails.
        for (name, value) in &spec.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                headers.append(name, value);
            }
        }
        // HTTP/2 carries the host as `:authority`.
        headers.remove(HOST);
        if !headers.contains_key(USER_AGENT) {
            headers.insert(USER_AGENT, self.user_agent.clone());
        }
        if let Some(auth) = &target.basic_auth
            && !headers.contains_key(AUTHORIZATION)
            && let Ok(v) = HeaderValue::from_str(auth)
        {
            headers.insert(AUTHORIZATION, v);
        }
        if let Some(jar) = req.cookie {
            // The jar's cookies go after all those the test set by hand.
            let mut value = String::new();
            for own in headers
                .get_all(COOKIE)
                .iter()
                .filter_map(|v| v.to_str().ok())
            {
                value.push_str(own);
                value.push_str("; ");
            }
            value.push_str(jar);
            if let Ok(v) = HeaderValue::from_str(&value) {
                headers.insert(COOKIE, v);
            }
        }
        out
    }

    /// The request on a connection of `conns` (or a new one) into `resp`;
    /// returns the connection when it can carry another request.
    async fn exchange(
        &self,
        conns: &VuConnections,
        target: &Target,
        gate: Option<Arc<tokio::sync::Mutex<()>>>,
        request: &Request<'_>,
        resp: &mut HttpResponse,
    ) -> Option<Conn> {
        let outgoing = h1::Outgoing {
            method: request.method,
            target: target.path.path_and_query().map_or("/", |p| p.as_str()),
            headers: &request.spec.headers,
            host: &target.host_header,
            user_agent: self.user_agent.as_bytes(),
            cookie: request.cookie,
            authorization: target.basic_auth.as_deref(),
            body: request.spec.body.as_deref().unwrap_or_default(),
        };
        let mut idle = conns.take(&target.key);
        // In a batch, wait while another task connects to this origin: if
        // it gets HTTP/2, its connection carries this request as well.
        let mut gate_held = match (&idle, gate) {
            (None, Some(gate)) => {
                let held = gate.lock_owned().await;
                idle = conns.take(&target.key);
                Some(held)
            }
            _ => None,
        };
        // A kept-alive connection may have been closed by the server while
        // idle; then the request comes back unsent and goes out once more
        // on a fresh connection.
        for attempt in 0..2 {
            let (mut conn, reused_at) = match self
                .connection(
                    conns,
                    target,
                    idle.take(),
                    resp.in_flight.started,
                    &mut resp.timings,
                )
                .await
            {
                Ok(c) => c,
                Err(e) => {
                    resp.error = Some(e);
                    return None;
                }
            };
            drop(gate_held.take());
            resp.tls_version = conn.tls_version;
            resp.proto = Some(conn.proto().tag());
            conn.begin_request();
            let send_start = reused_at.unwrap_or_else(now_ns);
            resp.in_flight.marks = Some(conn.marks.clone());
            resp.in_flight.send_start = send_start;
            let complete = match &mut conn.sender {
                Sender::H1(c) => {
                    let keep_into = (request.mode == BodyMode::Keep).then_some(&self.pool);
                    match c.exchange(&outgoing, keep_into, request.limit).await {
                        Ok(got) => {
                            self.h1_received(&mut conn, got, send_start, request, resp);
                            true
                        }
                        // The server closed a kept-alive connection as
                        // the request went out.
                        Err(f)
                            if attempt == 0 && conn.reused && h1::may_retry(request.method, &f) =>
                        {
                            continue;
                        }
                        Err(f) => {
                            cut(resp, f.error);
                            false
                        }
                    }
                }
                // Boxed: hyper's request and response futures would
                // otherwise size every request's future, HTTP/1.1 ones
                // included, past what the allocator serves from its
                // per-thread cache.
                Sender::H2(_) => {
                    crate::boxed_in_place(|| {
                        self.exchange_h2(&mut conn, target, request, send_start, resp)
                    })
                    .await
                }
            };
            return (complete && resp.error.is_none()).then_some(conn);
        }
        None
    }

    /// An idle connection of the VU's that can take the request at once,
    /// or a new one (shared right away with the VU's other requests when
    /// it is HTTP/2); with when a reused one was ready, which is when its
    /// request starts.
    async fn connection(
        &self,
        conns: &VuConnections,
        target: &Target,
        idle: Option<Conn>,
        t0: u64,
        timings: &mut Timings,
    ) -> Result<(Conn, Option<u64>), HttpError> {
        if let Some(mut c) = idle
            && ready(&mut c).await
        {
            // A reused connection sends at once: one clock read for both.
            let now = now_ns();
            timings.blocked = now - t0;
            return Ok((c, Some(now)));
        }
        // Boxed, as HTTP/2 is: only new connections need it.
        let c = Box::pin(self.connect(target, conns.source(), t0, timings)).await?;
        if let Some(shared) = c.share()
            && !self.config.no_connection_reuse
        {
            // Others of the batch can use it right away.
            conns.put(&target.key, shared);
        }
        Ok((c, None))
    }

    /// An HTTP/1.1 response received on `conn`, into `resp`. (The
    /// exchange itself is awaited in [`Client::exchange`]: one more
    /// future around it would grow every request's future.)
    fn h1_received(
        &self,
        conn: &mut Conn,
        got: h1::Received,
        send_start: u64,
        request: &Request<'_>,
        resp: &mut HttpResponse,
    ) {
        conn.reused = true;
        let end = now_ns();
        h1_phases(&conn.marks, send_start, end, &mut resp.timings);
        (resp.bytes_sent, resp.bytes_received) = conn.take_bytes();
        resp.status = got.status;
        if got.http10 {
            resp.proto = Some("HTTP/1.0");
        }
        resp.headers = got.headers;
        self.settle_body(resp, got.body, got.body_len, request);
    }

    /// An HTTP/2 request on `conn` (not retried: the request is hyper's
    /// from the start). Whether the response came.
    async fn exchange_h2(
        &self,
        conn: &mut Conn,
        target: &Target,
        request: &Request<'_>,
        send_start: u64,
        resp: &mut HttpResponse,
    ) -> bool {
        let Sender::H2(s) = &mut conn.sender else {
            return false;
        };
        match s.send_request(self.build(target, request)).await {
            Ok(response) => {
                conn.reused = true;
                self.receive_h2(conn, send_start, response, request, resp)
                    .await;
                true
            }
            Err(e) => {
                cut(resp, HttpError::from_hyper(&e));
                false
            }
        }
    }

    /// Resolve, dial and handshake. The work runs as its own task: a TLS
    /// handshake is too deep a future to poll on a VU's small fiber stack.
    async fn connect(
        &self,
        target: &Target,
        source: Option<IpAddr>,
        t0: u64,
        timings: &mut Timings,
    ) -> Result<Conn, HttpError> {
        let how = Handshake {
            tls: if target.tls {
                let name = server_name(&target.host).ok_or_else(|| {
                    HttpError::new(
                        ErrorCode::InvalidUrl,
                        format!("{:?} is not a valid TLS server name", target.host),
                    )
                })?;
                Some((self.tls.clone(), name))
            } else {
                None
            },
            h2c: !target.tls && self.config.h2c,
        };
        let (resolver, host, port, authority, egress) = (
            self.resolver.clone(),
            target.host.clone(),
            target.port,
            target.host_header.clone(),
            self.config.egress.clone(),
        );
        // The dial future (a TLS handshake inside) is built in the task,
        // on a worker's stack: spawning it whole would copy it through
        // several frames of the caller's, the VU's fiber when polled
        // inline, whose touched pages stay resident.
        let task = tokio::spawn(async move {
            Box::pin(dial(resolver, host, port, authority, how, egress, source)).await
        });
        let dialled = task
            .await
            .map_err(|e| HttpError::new(ErrorCode::Generic, format!("connect task failed: {e}")))?;
        let d = dialled?;
        timings.blocked = d.resolved - t0;
        timings.connecting = d.connected - d.resolved;
        timings.tls_handshaking = d.tls_ns;
        Ok(d.conn)
    }

    async fn receive_h2(
        &self,
        conn: &Conn,
        send_start: u64,
        response: Response<hyper::body::Incoming>,
        request: &Request<'_>,
        resp: &mut HttpResponse,
    ) {
        let mode = request.mode;
        // Discarded bodies hold no memory: only kept ones are limited.
        let limit = match mode {
            BodyMode::Keep => request.limit,
            BodyMode::Discard => u64::MAX,
        };
        let headers_at = now_ns();
        let (parts, mut body) = response.into_parts();
        resp.status = parts.status.as_u16();
        if parts.version == Version::HTTP_2 {
            resp.proto = Some(Proto::Http2.tag());
        }
        let expected = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        resp.headers = Headers::from_map(parts.headers);
        if expected.is_some_and(|n| n as u64 > limit) {
            resp.error = Some(HttpError::body_too_large(limit));
        }
        let mut buf = match mode {
            BodyMode::Keep => Some(self.pool.take(expected)),
            BodyMode::Discard => None,
        };
        let mut len = 0u64;
        // Dropping the body past the limit resets the stream.
        while resp.error.is_none()
            && let Some(frame) = body.frame().await
        {
            match frame {
                Ok(frame) => {
                    if let Some(data) = frame.data_ref() {
                        len += data.len() as u64;
                        if len > limit {
                            resp.error = Some(HttpError::body_too_large(limit));
                            break;
                        }
                        if let Some(b) = buf.as_mut() {
                            b.extend(data);
                        }
                    }
                }
                Err(e) => {
                    resp.error = Some(HttpError::from_hyper(&e));
                    break;
                }
            }
        }
        let end = now_ns();
        // Streams share the socket, so its marks belong to no one
        // request: waiting runs to the response headers.
        let t = &mut resp.timings;
        t.sending = 0;
        t.waiting = headers_at - send_start;
        t.receiving = end - headers_at;
        t.duration = end - send_start;
        (resp.bytes_sent, resp.bytes_received) = conn.take_bytes();
        if resp.error.is_some() {
            resp.status = 0;
            resp.body = None;
            resp.body_len = len;
            return;
        }
        self.settle_body(resp, buf, len, request);
    }

    /// Hand the received body to the response, decoded (to at most the
    /// request's limit) when it is kept and content-encoded.
    fn settle_body(
        &self,
        resp: &mut HttpResponse,
        buf: Option<PooledBuf>,
        len: u64,
        request: &Request<'_>,
    ) {
        resp.body_len = len;
        let encoded = request.mode == BodyMode::Keep && decode::is_encoded(&resp.headers);
        let mut buf = buf;
        if let (true, Some(raw)) = (encoded, buf.as_ref()) {
            // Decoded straight into the buffer the test will read; the raw
            // one goes back to the pool.
            let raw = raw.as_slice();
            let hint = decode::decoded_size_hint(&resp.headers, raw, request.limit);
            let mut out = self.pool.take(hint);
            match decode::decode_into(&resp.headers, raw, request.limit, out.vec_mut()) {
                Ok(()) => {
                    resp.body_len = out.len() as u64;
                    buf = Some(out);
                }
                Err(DecodeError::Invalid(message)) => {
                    resp.error = Some(HttpError::new(ErrorCode::Decompression, message));
                    buf = None;
                }
                Err(DecodeError::TooLarge) => {
                    resp.error = Some(HttpError::new(
                        ErrorCode::DecodedTooLarge,
                        format!(
                            "decoded response body larger than the limit of {} bytes \
                             (maxResponseBodySize; a decompression bomb?)",
                            request.limit
                        ),
                    ));
                    buf = None;
                }
            }
        }
        resp.body = buf;
    }
}

/// One request of an exchange: the test's, checked, with the cookies of
/// the VU's jar for its URL.
struct Request<'a> {
    spec: &'a RequestSpec,
    method: &'a Method,
    cookie: Option<&'a str>,
    /// Whether the body is kept for the test or only counted.
    mode: BodyMode,
    /// The largest body kept, on the wire and decoded.
    limit: u64,
}

/// A request that failed or was cut (its timeout, the end of the test)
/// before its response was whole: whatever it had received is dropped;
/// it keeps the bytes it moved, its phases add up to its duration, and
/// its error says the phase it failed in.
pub(crate) fn cut(resp: &mut HttpResponse, error: HttpError) {
    let end = now_ns();
    let f = &resp.in_flight;
    let t = &mut resp.timings;
    let phase = match &f.marks {
        Some(marks) => {
            (resp.bytes_sent, resp.bytes_received) =
                (marks.written.swap(0, Relaxed), marks.read.swap(0, Relaxed));
            cut_phases(marks, f.send_start, end, t)
        }
        None => {
            // Still connecting: the time went there.
            t.connecting = end
                .saturating_sub(f.started)
                .saturating_sub(t.blocked + t.tls_handshaking);
            (t.sending, t.waiting, t.receiving, t.duration) = (0, 0, 0, 0);
            "connecting"
        }
    };
    resp.status = 0;
    resp.headers.clear();
    resp.body = None;
    resp.error = Some(HttpError::new(
        error.code,
        format!("{} (while {phase})", error.message),
    ));
}

/// The phases of an exchange cut at `end`, from its socket's marks; and
/// the phase it was in: sending until the whole request was written,
/// waiting until the first byte came back, receiving after.
fn cut_phases(marks: &IoMarks, send_start: u64, end: u64, t: &mut Timings) -> &'static str {
    let or_end = |at: u64| {
        if at == 0 {
            end
        } else {
            at.clamp(send_start, end)
        }
    };
    let sent = or_end(marks.request_sent.load(Relaxed));
    let first_read = or_end(marks.first_read.load(Relaxed)).max(sent);
    t.sending = sent - send_start;
    t.waiting = first_read - sent;
    t.receiving = end - first_read;
    t.duration = end - send_start;
    if first_read < end {
        "receiving the response"
    } else if sent < end {
        "waiting for the response"
    } else {
        "sending the request"
    }
}

/// The request's method, once its method and header fields are known to
/// be sendable (errors a test can fix, before any connection is made).
fn check_request(spec: &RequestSpec) -> Result<Method, HttpError> {
    let method = Method::from_bytes(spec.method.as_bytes()).map_err(|_| {
        HttpError::new(
            ErrorCode::Generic,
            format!("invalid HTTP method {:?}", spec.method),
        )
    })?;
    for (name, value) in &spec.headers {
        h1::check_header(name, value).map_err(|e| HttpError::new(ErrorCode::Generic, e))?;
    }
    Ok(method)
}

/// The phases of an HTTP/1.1 exchange from its socket's marks.
fn h1_phases(marks: &IoMarks, send_start: u64, end: u64, t: &mut Timings) {
    let last_write = marks.last_write.load(Relaxed).max(send_start);
    let first_read = marks.first_read.load(Relaxed).max(send_start);
    // The server may answer before the request is fully written; the
    // phases are cut so that they always add up to `duration`.
    let sent = last_write.min(first_read).min(end);
    t.sending = sent - send_start;
    t.waiting = first_read.min(end) - sent;
    t.receiving = end - first_read.min(end);
    t.duration = end - send_start;
}

/// Waits until an idle connection can take a request; false when it
/// closed meanwhile.
async fn ready(conn: &mut Conn) -> bool {
    match &mut conn.sender {
        // Checked when taken from the idle pool.
        Sender::H1(c) => c.is_reusable(),
        Sender::H2(s) => s.ready().await.is_ok(),
    }
}

/// A new connection and when its phases ended.
struct Dialled {
    conn: Conn,
    resolved: u64,
    connected: u64,
    tls_ns: u64,
}

/// Resolve `host`, connect to the first of its addresses that the egress
/// policy lets through and that answers, and handshake. The policy sees
/// the name before the lookup and each address just before it is
/// connected to: nothing else is resolved or connected to in between.
/// With a `source`, connections are made from it (`--local-ips`).
async fn dial(
    resolver: Arc<Resolver>,
    host: String,
    port: u16,
    authority: String,
    how: Handshake,
    egress: Option<Arc<EgressPolicy>>,
    source: Option<IpAddr>,
) -> Result<Dialled, HttpError> {
    let name = match &egress {
        Some(policy) => Some(policy.check_name(&host, port)?),
        None => None,
    };
    let addrs = resolver.resolve(&host, port).await?;
    let resolved = now_ns();
    let mut last_err = None;
    let mut stream = None;
    for addr in addrs {
        if let (Some(policy), Some(name)) = (&egress, &name)
            && let Err(refused) = policy.check_addr(&host, addr, name)
        {
            // A connection error to an address that was allowed says
            // more than a refusal of another address.
            last_err.get_or_insert(refused);
            continue;
        }
        match source::connect(addr, source).await {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last_err = Some(HttpError::from_connect(&e, &authority)),
        }
    }
    let Some(stream) = stream else {
        return Err(last_err.unwrap_or_else(|| {
            HttpError::new(ErrorCode::Dial, format!("dial tcp {authority}: no address"))
        }));
    };
    let connected = now_ns();
    let (conn, tls_ns) = Conn::open(stream, how, &host).await?;
    Ok(Dialled {
        conn,
        resolved,
        connected,
        tls_ns,
    })
}
