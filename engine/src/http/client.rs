//! The client: request building, connection reuse per VU, the timed
//! exchange, and batches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HOST, HeaderName, HeaderValue, USER_AGENT};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use super::conn::{Conn, now_ns};
use super::error::{ErrorCode, HttpError};
use super::pool::BodyPool;
use super::{BodyMode, HttpResponse, Timings};

/// Client-wide settings.
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
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            timeout: Duration::from_secs(60),
            user_agent: format!("wload/{}", env!("CARGO_PKG_VERSION")),
            batch: 20,
            batch_per_host: 6,
        }
    }
}

/// One request as the host hands it over.
#[derive(Debug, Clone, Default)]
pub struct RequestSpec {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub timeout: Option<Duration>,
    pub body_mode: BodyMode,
}

/// The idle keep-alive connections of one VU, by `host:port`.
#[derive(Default)]
pub struct VuConnections {
    idle: HashMap<String, Vec<Conn>>,
}

impl VuConnections {
    fn take(&mut self, authority: &str) -> Option<Conn> {
        let conns = self.idle.get_mut(authority)?;
        while let Some(conn) = conns.pop() {
            if conn.is_open() {
                return Some(conn);
            }
        }
        None
    }

    fn put(&mut self, authority: &str, conn: Conn) {
        if !conn.is_open() {
            return;
        }
        match self.idle.get_mut(authority) {
            Some(v) => v.push(conn),
            None => {
                self.idle.insert(authority.to_owned(), vec![conn]);
            }
        }
    }

    /// Open connections kept by this VU.
    pub fn len(&self) -> usize {
        self.idle.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a request goes.
struct Target {
    /// `host:port`, the key of the connection pool.
    authority: String,
    host: String,
    port: u16,
    /// Value of the `host` header.
    host_header: String,
    path: Uri,
}

fn parse_target(url: &str) -> Result<Target, HttpError> {
    let uri: Uri = url
        .parse()
        .map_err(|e| HttpError::new(ErrorCode::InvalidUrl, format!("invalid URL {url:?}: {e}")))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => {
            return Err(HttpError::new(
                ErrorCode::Tls,
                format!("{url}: https is not supported by this build of wload; use http://"),
            ));
        }
        _ => {
            return Err(HttpError::new(
                ErrorCode::InvalidUrl,
                format!("invalid URL {url:?}: expected an absolute http:// URL"),
            ));
        }
    }
    let authority = uri
        .authority()
        .ok_or_else(|| HttpError::new(ErrorCode::InvalidUrl, format!("URL {url:?} has no host")))?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = authority.port_u16().unwrap_or(80);
    let path = uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .parse::<Uri>()
        .map_err(|e| HttpError::new(ErrorCode::InvalidUrl, format!("invalid URL {url:?}: {e}")))?;
    Ok(Target {
        authority: format!("{}:{port}", authority.host()),
        host: host.to_owned(),
        port,
        host_header: authority.as_str().to_owned(),
        path,
    })
}

/// The client shared by all VUs of a run.
pub struct Client {
    config: ClientConfig,
    pool: Arc<BodyPool>,
    user_agent: HeaderValue,
}

impl Client {
    pub fn new(config: ClientConfig, pool: Arc<BodyPool>) -> Client {
        let user_agent = HeaderValue::from_str(&config.user_agent)
            .unwrap_or_else(|_| HeaderValue::from_static("wload"));
        Client {
            config,
            pool,
            user_agent,
        }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Send one request on one of `conns`' connections (or a new one) and
    /// read the whole response. Never fails: errors are in the response.
    pub async fn send(&self, conns: &mut VuConnections, spec: RequestSpec) -> HttpResponse {
        let target = match parse_target(&spec.url) {
            Ok(t) => t,
            Err(e) => return failed(&spec, e),
        };
        let idle = conns.take(&target.authority);
        let (resp, conn) = self.perform(&target, idle, spec).await;
        if let Some(conn) = conn {
            conns.put(&target.authority, conn);
        }
        resp
    }

    /// Send `specs` in parallel, at most `batch` at once and
    /// `batch_per_host` per host, reusing and adding connections of this
    /// VU. Responses are in the order of `specs`.
    pub async fn batch(
        self: &Arc<Self>,
        conns: &mut VuConnections,
        specs: Vec<RequestSpec>,
    ) -> Vec<HttpResponse> {
        let shared = Arc::new(Mutex::new(std::mem::take(conns)));
        let all = Arc::new(Semaphore::new(self.config.batch.max(1)));
        let mut per_host: HashMap<String, Arc<Semaphore>> = HashMap::new();
        let mut tasks = tokio::task::JoinSet::new();
        let mut out: Vec<Option<HttpResponse>> = Vec::with_capacity(specs.len());
        for (i, spec) in specs.into_iter().enumerate() {
            out.push(None);
            let target = match parse_target(&spec.url) {
                Ok(t) => t,
                Err(e) => {
                    out[i] = Some(failed(&spec, e));
                    continue;
                }
            };
            let host_sem = per_host
                .entry(target.authority.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(self.config.batch_per_host.max(1))))
                .clone();
            let (client, shared, all) = (self.clone(), shared.clone(), all.clone());
            tasks.spawn(async move {
                let _all = all.acquire_owned().await;
                let _host = host_sem.acquire_owned().await;
                let idle = lock(&shared).take(&target.authority);
                let (resp, conn) = client.perform(&target, idle, spec).await;
                if let Some(conn) = conn {
                    lock(&shared).put(&target.authority, conn);
                }
                (i, resp)
            });
        }
        while let Some(done) = tasks.join_next().await {
            if let Ok((i, resp)) = done {
                out[i] = Some(resp);
            }
        }
        *conns = std::mem::take(&mut *lock(&shared));
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| HttpResponse {
                    error: Some(HttpError::new(
                        ErrorCode::Generic,
                        "batch request task failed",
                    )),
                    ..empty_response("", "")
                })
            })
            .collect()
    }

    /// The timed exchange, under the request's timeout. Returns the
    /// connection when it can be reused.
    async fn perform(
        &self,
        target: &Target,
        idle: Option<Conn>,
        spec: RequestSpec,
    ) -> (HttpResponse, Option<Conn>) {
        let timeout = spec.timeout.unwrap_or(self.config.timeout);
        let mut resp = empty_response(&spec.method, &spec.url);
        let request = match self.build(target, &spec) {
            Ok(r) => r,
            Err(e) => {
                resp.error = Some(e);
                return (resp, idle);
            }
        };
        let started = now_ns();
        let mut conn_out = None;
        let outcome = tokio::time::timeout(
            timeout,
            self.exchange(
                target,
                idle,
                request,
                spec.body_mode,
                &mut resp,
                &mut conn_out,
            ),
        )
        .await;
        if outcome.is_err() {
            let t = &mut resp.timings;
            t.duration = now_ns()
                .saturating_sub(started)
                .saturating_sub(t.blocked + t.connecting);
            resp.status = 0;
            resp.headers.clear();
            resp.body = None;
            resp.error = Some(HttpError::new(
                ErrorCode::RequestTimeout,
                format!(
                    "request timeout: no complete response within {:.3}s",
                    timeout.as_secs_f64()
                ),
            ));
            // A connection with a request half done cannot be reused.
            conn_out = None;
        }
        (resp, conn_out)
    }

    fn build(
        &self,
        target: &Target,
        spec: &RequestSpec,
    ) -> Result<Request<Full<Bytes>>, HttpError> {
        let method = Method::from_bytes(spec.method.as_bytes()).map_err(|_| {
            HttpError::new(
                ErrorCode::Generic,
                format!("invalid HTTP method {:?}", spec.method),
            )
        })?;
        let body = spec.body.clone().map(Bytes::from).unwrap_or_default();
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = target.path.clone();
        let headers = req.headers_mut();
        for (name, value) in &spec.headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                HttpError::new(ErrorCode::Generic, format!("invalid header name {name:?}"))
            })?;
            let value = HeaderValue::from_str(value).map_err(|_| {
                HttpError::new(
                    ErrorCode::Generic,
                    format!("invalid value for header {name}"),
                )
            })?;
            headers.append(name, value);
        }
        if !headers.contains_key(HOST) {
            let host = HeaderValue::from_str(&target.host_header).map_err(|_| {
                HttpError::new(
                    ErrorCode::InvalidUrl,
                    format!("invalid host in {:?}", spec.url),
                )
            })?;
            headers.insert(HOST, host);
        }
        if !headers.contains_key(USER_AGENT) {
            headers.insert(USER_AGENT, self.user_agent.clone());
        }
        Ok(req)
    }

    async fn exchange(
        &self,
        target: &Target,
        idle: Option<Conn>,
        request: Request<Full<Bytes>>,
        mode: BodyMode,
        resp: &mut HttpResponse,
        conn_out: &mut Option<Conn>,
    ) {
        let t0 = now_ns();
        let mut request = request;
        let mut idle = idle;
        // A kept-alive connection may have been closed by the server while
        // idle; then the request comes back unsent and goes out once more
        // on a fresh connection.
        for attempt in 0..2 {
            let ready = match idle.take() {
                Some(mut c) => c.sender.ready().await.is_ok().then_some(c),
                None => None,
            };
            let mut conn = match ready {
                Some(c) => {
                    resp.timings.blocked = now_ns() - t0;
                    c
                }
                None => match self.connect(target, t0, &mut resp.timings).await {
                    Ok(c) => c,
                    Err(e) => {
                        resp.error = Some(e);
                        return;
                    }
                },
            };
            conn.begin_request();
            let send_start = now_ns();
            match conn.sender.try_send_request(request).await {
                Ok(response) => {
                    conn.reused = true;
                    self.receive(&conn, send_start, response, mode, resp).await;
                    if resp.error.is_none() {
                        *conn_out = Some(conn);
                    }
                    return;
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if attempt == 0 && conn.reused => {
                        request = unsent;
                        continue;
                    }
                    _ => {
                        resp.error = Some(HttpError::from_hyper(e.error()));
                        let m = &conn.marks;
                        resp.bytes_sent = m.written.load(std::sync::atomic::Ordering::Relaxed);
                        resp.bytes_received = m.read.load(std::sync::atomic::Ordering::Relaxed);
                        resp.timings.duration = now_ns() - send_start;
                        resp.timings.sending = resp.timings.duration;
                        return;
                    }
                },
            }
        }
    }

    async fn connect(
        &self,
        target: &Target,
        t0: u64,
        timings: &mut Timings,
    ) -> Result<Conn, HttpError> {
        // IP literals skip the resolver; names are resolved per new
        // connection, and that time counts as `blocked`.
        let addrs: Vec<std::net::SocketAddr> = match target.host.parse::<std::net::IpAddr>() {
            Ok(ip) => vec![(ip, target.port).into()],
            Err(_) => tokio::net::lookup_host((target.host.as_str(), target.port))
                .await
                .map_err(|e| {
                    HttpError::new(ErrorCode::Dns, format!("lookup {}: {e}", target.host))
                })?
                .collect(),
        };
        let Some(addr) = addrs.first().copied() else {
            return Err(HttpError::new(
                ErrorCode::NoIpFound,
                format!("lookup {}: no IP address found", target.host),
            ));
        };
        let dial_start = now_ns();
        timings.blocked = dial_start - t0;
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| HttpError::from_connect(&e, &target.authority))?;
        let conn = Conn::open(stream)
            .await
            .map_err(|e| HttpError::from_hyper(&e))?;
        timings.connecting = now_ns() - dial_start;
        Ok(conn)
    }

    async fn receive(
        &self,
        conn: &Conn,
        send_start: u64,
        response: http::Response<hyper::body::Incoming>,
        mode: BodyMode,
        resp: &mut HttpResponse,
    ) {
        use std::sync::atomic::Ordering::Relaxed;
        let (parts, mut body) = response.into_parts();
        resp.status = parts.status.as_u16();
        resp.headers = parts.headers;
        let expected = resp
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let mut buf = match mode {
            BodyMode::Keep => Some(self.pool.take(expected)),
            BodyMode::Discard => None,
        };
        let mut len = 0u64;
        while let Some(frame) = body.frame().await {
            match frame {
                Ok(frame) => {
                    if let Some(data) = frame.data_ref() {
                        len += data.len() as u64;
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
        let marks = &conn.marks;
        let last_write = marks.last_write.load(Relaxed).max(send_start);
        let first_read = marks.first_read.load(Relaxed).max(send_start);
        // The server may answer before the request is fully written; the
        // phases are cut so that they always add up to `duration`.
        let sent = last_write.min(first_read).min(end);
        let t = &mut resp.timings;
        t.sending = sent - send_start;
        t.waiting = first_read.min(end) - sent;
        t.receiving = end - first_read.min(end);
        t.duration = end - send_start;
        resp.body_len = len;
        resp.body = buf;
        resp.bytes_sent = marks.written.load(Relaxed);
        resp.bytes_received = marks.read.load(Relaxed);
        if resp.error.is_some() {
            resp.status = 0;
            resp.body = None;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn empty_response(method: &str, url: &str) -> HttpResponse {
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
    }
}

fn failed(spec: &RequestSpec, error: HttpError) -> HttpResponse {
    HttpResponse {
        error: Some(error),
        ..empty_response(&spec.method, &spec.url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_bad_urls_get_codes() {
        let t = parse_target("http://127.0.0.1:8080/a/b?c=d").unwrap();
        assert_eq!(t.authority, "127.0.0.1:8080");
        assert_eq!(t.path, "/a/b?c=d");
        assert_eq!(t.host_header, "127.0.0.1:8080");
        let t = parse_target("http://example.test").unwrap();
        assert_eq!((t.port, t.path.to_string().as_str()), (80, "/"));
        let t = parse_target("http://[::1]:81/").unwrap();
        assert_eq!(t.host, "::1");
        for bad in ["", "/relative", "ftp://x/", "http://"] {
            let e = parse_target(bad).err().unwrap();
            assert_eq!(e.code, ErrorCode::InvalidUrl, "{bad}: {e}");
        }
        assert_eq!(
            parse_target("https://x/").err().unwrap().code,
            ErrorCode::Tls
        );
    }
}
