//! HTTP/1.1 on one connection, polled by the task that sends the request.
//!
//! hyper's client connection runs as a driver task behind a channel: each
//! request hops from the VU's task to the driver and back, and every
//! kept-alive connection holds hyper's read and write buffers and the
//! channel for its whole life (~33 KiB per idle VU, docs/BENCHMARKS.md).
//! Here the VU's own task writes the request and reads the response, and
//! an idle connection is only its socket: the buffers come from a
//! per-thread pool for one exchange, the read buffer only once the response
//! has begun to arrive. HTTP/2 stays on hyper.
//!
//! Framing follows RFC 9112: one request in flight (no pipelining), 1xx
//! responses skipped, bodies delimited by `content-length`, the chunked
//! transfer coding or the end of the connection, keep-alive decided by the
//! version and the `connection` header.

use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::{BufMut, Bytes};
use http::{Method, StatusCode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use super::error::{ErrorCode, HttpError};
use super::headers::{Headers, MAX_FIELDS, parse_response};
use super::pool::{BodyPool, PooledBuf, TRIM_EVERY, TRIM_PERIOD_NS};
use super::socket::{Stream, now_ns};
use std::sync::atomic::Ordering::Relaxed;

/// Largest response head (status line and headers) accepted.
const MAX_HEAD: usize = 256 << 10;
/// Longest chunk-size line (with extensions) of a chunked body.
const MAX_CHUNK_LINE: usize = 4 << 10;
/// Largest trailer section of a chunked body (as [`MAX_HEAD`]).
const MAX_TRAILERS: usize = MAX_HEAD;
/// Interim (1xx) responses accepted before the final one, as Go's client
/// (`max1xxResponses`): a server that sends them forever is refused.
const MAX_INTERIM: usize = 5;
/// Size of a fresh scratch buffer and of each read into one.
const READ_CHUNK: usize = 16 << 10;
/// Request bodies up to this size go out in the same write as the head.
const INLINE_BODY: usize = 16 << 10;
/// Scratch buffers that grew beyond this are freed instead of pooled.
const POOLED_MAX: usize = 64 << 10;
/// Idle scratch buffers kept per thread.
const POOLED_PER_THREAD: usize = 64;

thread_local! {
    static SCRATCH: RefCell<ScratchPool> = const {
        RefCell::new(ScratchPool { free: Vec::new(), low: 0, returns: 0, at: 0 })
    };
}

/// A thread's idle scratch buffers, trimmed as the body pool is
/// ([`super::pool`]): every [`TRIM_EVERY`] returns, once a period passed,
/// the fewest that were idle at once during it are freed.
struct ScratchPool {
    free: Vec<Vec<u8>>,
    /// The fewest idle buffers since the last trim.
    low: usize,
    returns: u32,
    /// `now_ns` of the last trim (0: none yet).
    at: u64,
}

impl ScratchPool {
    fn pop(&mut self) -> Option<Vec<u8>> {
        let buf = self.free.pop();
        self.low = self.low.min(self.free.len());
        buf
    }

    fn push(&mut self, buf: Vec<u8>) {
        if self.free.len() < POOLED_PER_THREAD {
            self.free.push(buf);
        }
        self.returns = self.returns.wrapping_add(1);
        if self.returns.is_multiple_of(TRIM_EVERY) {
            self.trim(now_ns());
        }
    }

    #[cold]
    fn trim(&mut self, now: u64) {
        if now.saturating_sub(self.at) < TRIM_PERIOD_NS {
            return;
        }
        self.at = now;
        // The oldest returns are at the bottom: those go.
        let unused = self.low.min(self.free.len());
        self.free.drain(..unused);
        self.low = self.free.len();
    }
}

/// A buffer borrowed from this thread's pool for the length of one
/// exchange. A task may move between threads; the buffer then simply
/// returns to another thread's pool.
struct Scratch(Vec<u8>);

impl Scratch {
    fn take() -> Scratch {
        let pooled = SCRATCH.try_with(|p| p.borrow_mut().pop()).ok().flatten();
        Scratch(pooled.unwrap_or_else(|| Vec::with_capacity(READ_CHUNK)))
    }

    /// Read once from `stream` into the free space, making room first.
    /// End of stream is an error: every caller expects more bytes.
    async fn fill(&mut self, stream: &mut Stream) -> Result<(), Failure> {
        if self.0.capacity() - self.0.len() < READ_CHUNK / 4 {
            self.0.reserve(READ_CHUNK);
        }
        match stream.read_buf(&mut self.0).await {
            Ok(0) => Err(Failure::incomplete()),
            Ok(_) => Ok(()),
            Err(e) => Err(Failure::io(&e)),
        }
    }

    /// Give the buffer back to the thread's pool now; `self` is left
    /// empty, without capacity (a later [`Scratch::fill`] allocates).
    fn release(&mut self) {
        drop(Scratch(std::mem::take(&mut self.0)));
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.0);
        if buf.capacity() == 0 || buf.capacity() > POOLED_MAX {
            return;
        }
        buf.clear();
        let _ = SCRATCH.try_with(|p| p.borrow_mut().push(buf));
    }
}

/// Why an exchange failed, and what the server can have seen of it.
#[derive(Debug)]
pub struct Failure {
    pub error: HttpError,
    /// No byte of the request reached the socket.
    pub nothing_sent: bool,
    /// No byte of a response arrived.
    pub nothing_received: bool,
}

impl Failure {
    fn io(err: &io::Error) -> Failure {
        Failure {
            error: HttpError::new(ErrorCode::of_io(err), err.to_string()),
            nothing_sent: false,
            nothing_received: false,
        }
    }

    fn incomplete() -> Failure {
        Failure {
            error: HttpError::new(
                ErrorCode::ConnectionReset,
                "connection closed before the response was complete",
            ),
            nothing_sent: false,
            nothing_received: false,
        }
    }

    /// A body that passed the request's limit of `limit` bytes.
    fn too_large(limit: u64) -> Failure {
        Failure {
            error: HttpError::body_too_large(limit),
            nothing_sent: false,
            nothing_received: false,
        }
    }

    fn malformed(what: impl std::fmt::Display) -> Failure {
        Failure {
            error: HttpError::new(ErrorCode::Generic, format!("malformed response: {what}")),
            nothing_sent: false,
            nothing_received: false,
        }
    }
}

/// A response as read off the connection.
pub struct Received {
    pub status: u16,
    /// HTTP/1.0 rather than HTTP/1.1.
    pub http10: bool,
    pub headers: Headers,
    /// The body as sent (still content-encoded), unless discarded.
    pub body: Option<PooledBuf>,
    /// Body bytes read, in both modes.
    pub body_len: u64,
}

/// How the response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(u64),
    Chunked,
    UntilClose,
}

/// The client side of one HTTP/1.1 connection.
pub struct H1Conn {
    stream: Stream,
    /// Whether the last exchange left the connection fit for another.
    reusable: bool,
}

impl H1Conn {
    pub fn new(stream: Stream) -> H1Conn {
        H1Conn {
            stream,
            reusable: true,
        }
    }

    pub fn is_reusable(&self) -> bool {
        self.reusable
    }

    /// Whether an idle connection can carry a request: the server has
    /// neither closed it nor sent anything unasked. Never waits.
    pub fn check_idle(&mut self) -> bool {
        if !self.reusable {
            return false;
        }
        let mut probe = [0u8; 1];
        let mut buf = ReadBuf::new(&mut probe);
        let mut cx = Context::from_waker(Waker::noop());
        if Pin::new(&mut self.stream)
            .poll_read(&mut cx, &mut buf)
            .is_pending()
        {
            return true;
        }
        // End of stream, an error, or stray bytes: not usable.
        self.reusable = false;
        false
    }

    /// Send `req` and read its whole response; the body goes into a buffer
    /// from `keep_into`, or is counted and dropped when that is `None`.
    /// A kept body longer than `limit` bytes fails the exchange
    /// ([`ErrorCode::ResponseTooLarge`]): the bytes read so far are counted,
    /// and the connection, its response unfinished, is not reused.
    pub async fn exchange(
        &mut self,
        req: &Outgoing<'_>,
        keep_into: Option<&Arc<BodyPool>>,
        limit: u64,
    ) -> Result<Received, Failure> {
        // Until the response is whole, the connection is in an unknown
        // state (a timeout drops this future midway).
        self.reusable = false;
        // Discarded bodies hold no memory: only kept ones are limited.
        let limit = if keep_into.is_some() { limit } else { u64::MAX };
        let whole = match self.send(req).await {
            Ok(whole) => whole,
            Err(failed) => {
                // The server may have answered and closed before taking
                // the whole body (a 413, say): its response is the result.
                if failed.nothing_sent {
                    return Err(failed);
                }
                return match self.receive(req.method, keep_into, limit).await {
                    Ok((received, _)) => Ok(received),
                    Err(_) => Err(failed),
                };
            }
        };
        if whole {
            self.stream.marks().request_sent.store(now_ns(), Relaxed);
        }
        let (received, reusable) = self.receive(req.method, keep_into, limit).await?;
        // A request cut short by an early answer leaves the connection
        // out of step.
        self.reusable = whole && reusable && !req.has_token("connection", "close");
        Ok(received)
    }

    /// Write the request. Returns false when the server answered before
    /// a large body was all written (it stops being written then).
    async fn send(&mut self, req: &Outgoing<'_>) -> Result<bool, Failure> {
        let mut head = Scratch::take();
        let chunked = encode_head(&mut head.0, req);
        let body = req.body;
        let mut sent = 0usize;
        let result = async {
            let mut whole = true;
            if chunked {
                if !body.is_empty() {
                    head.0
                        .extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
                    write(&mut self.stream, &head.0, &mut sent).await?;
                    whole = write_unless_answered(&mut self.stream, body, &mut sent).await?;
                    if whole {
                        write(&mut self.stream, b"\r\n0\r\n\r\n", &mut sent).await?;
                    }
                } else {
                    head.0.extend_from_slice(b"0\r\n\r\n");
                    write(&mut self.stream, &head.0, &mut sent).await?;
                }
            } else if body.len() <= INLINE_BODY {
                head.0.extend_from_slice(body);
                write(&mut self.stream, &head.0, &mut sent).await?;
            } else {
                write(&mut self.stream, &head.0, &mut sent).await?;
                whole = write_unless_answered(&mut self.stream, body, &mut sent).await?;
            }
            self.stream.flush().await.map(|()| whole)
        }
        .await;
        result.map_err(|e| Failure {
            nothing_sent: sent == 0,
            nothing_received: true,
            ..Failure::io(&e)
        })
    }

    /// Read the response to a request of `method`. Also returns whether
    /// the connection may carry another request.
    async fn receive(
        &mut self,
        method: &Method,
        keep_into: Option<&Arc<BodyPool>>,
        limit: u64,
    ) -> Result<(Received, bool), Failure> {
        // The server works on the request while no buffer is held.
        self.stream.readable().await;
        let mut rb = Scratch::take();
        let mut interim = 0;
        let head = loop {
            if !rb.0.is_empty() {
                match parse_head(&rb.0)? {
                    Some(head) if (100..200).contains(&head.status) && head.status != 101 => {
                        // 1xx: an interim response; the final one follows.
                        interim += 1;
                        if interim > MAX_INTERIM {
                            return Err(Failure::malformed(format!(
                                "more than {MAX_INTERIM} interim (1xx) responses"
                            )));
                        }
                        rb.0.drain(..head.len);
                        continue;
                    }
                    Some(head) => break head,
                    None if rb.0.len() >= MAX_HEAD => {
                        return Err(Failure::malformed(format!(
                            "response head larger than {} KiB",
                            MAX_HEAD >> 10
                        )));
                    }
                    None => {}
                }
            }
            let before = rb.0.len();
            if let Err(mut f) = rb.fill(&mut self.stream).await {
                f.nothing_received = before == 0;
                return Err(f);
            }
        };
        let framing = framing(method, head.status, &head.fields)?;
        let mut reusable = framing != Framing::UntilClose
            && head.status != 101
            && if head.http10 {
                head.fields.keep_alive
            } else {
                !head.fields.close
            };
        if let Framing::Length(n) = framing
            && n > limit
        {
            // Refused before a byte of it is read.
            return Err(Failure::too_large(limit));
        }
        let mut body = keep_into.map(|pool| {
            pool.take(match framing {
                Framing::Length(n) => usize::try_from(n).ok(),
                _ => None,
            })
        });
        let mut len = 0u64;
        let mut pos = head.len;
        match framing {
            Framing::Empty => {}
            Framing::Length(n) => {
                let first = (rb.0.len() - pos).min(usize::try_from(n).unwrap_or(usize::MAX));
                keep(&mut body, &rb.0[pos..pos + first]);
                pos += first;
                len = first as u64;
                if pos == rb.0.len() && len < n {
                    // The rest straight from the socket into the body.
                    let remaining = n - len;
                    len += self.read_exact_into(&mut body, &mut rb, remaining).await?;
                    pos = rb.0.len();
                }
            }
            Framing::Chunked => {
                pos = self
                    .read_chunked(&mut body, &mut rb, pos, &mut len, limit)
                    .await?;
            }
            Framing::UntilClose => {
                len = self.read_to_end(&mut body, &mut rb, pos, limit).await?;
                pos = rb.0.len();
            }
        }
        // Bytes after the response were never asked for.
        reusable &= pos == rb.0.len();
        Ok((
            Received {
                status: head.status,
                http10: head.http10,
                headers: head.headers,
                body,
                body_len: len,
            },
            reusable,
        ))
    }

    /// Read exactly `n` more body bytes: into the body's own buffer when
    /// kept (no copy), through `rb` when discarded. Leaves `rb` empty.
    async fn read_exact_into(
        &mut self,
        body: &mut Option<PooledBuf>,
        rb: &mut Scratch,
        n: u64,
    ) -> Result<u64, Failure> {
        if body.is_some() {
            // The rest goes straight into the body: the scratch buffer
            // (16 KiB, empty now) goes back to the thread's pool rather
            // than being held through the whole body, so a 1 MB download
            // does not hold one per exchange in flight.
            rb.release();
        }
        let mut remaining = n;
        while remaining > 0 {
            let limit = usize::try_from(remaining).unwrap_or(usize::MAX);
            let got = match body {
                Some(b) => {
                    let buf = b.vec_mut();
                    if buf.capacity() == buf.len() {
                        buf.reserve(limit.min(READ_CHUNK * 4));
                    }
                    self.stream.read_buf(&mut buf.limit(limit)).await
                }
                None => {
                    rb.0.clear();
                    let room = rb.0.capacity().max(READ_CHUNK);
                    self.stream
                        .read_buf(&mut (&mut rb.0).limit(limit.min(room)))
                        .await
                }
            };
            match got {
                Ok(0) => return Err(Failure::incomplete()),
                Ok(k) => remaining -= k as u64,
                Err(e) => return Err(Failure::io(&e)),
            }
        }
        rb.0.clear();
        Ok(n)
    }

    /// Read a chunked body whose first bytes are `rb[pos..]`, of at most
    /// `limit` bytes. Returns the position in `rb` after the last chunk and
    /// its trailers.
    async fn read_chunked(
        &mut self,
        body: &mut Option<PooledBuf>,
        rb: &mut Scratch,
        mut pos: usize,
        len: &mut u64,
        limit: u64,
    ) -> Result<usize, Failure> {
        loop {
            let line = self.line(rb, &mut pos).await?;
            let size = chunk_size(&rb.0[line.clone()])?;
            if size == 0 {
                // Trailer fields, up to an empty line; they are dropped,
                // but a section without end is refused.
                let mut trailers = 0usize;
                loop {
                    let line = self.line(rb, &mut pos).await?;
                    if line.is_empty() {
                        return Ok(pos);
                    }
                    trailers += line.len() + 2;
                    if trailers > MAX_TRAILERS {
                        return Err(Failure::malformed(format!(
                            "trailer section larger than {} KiB",
                            MAX_TRAILERS >> 10
                        )));
                    }
                }
            }
            if size > limit.saturating_sub(*len) {
                return Err(Failure::too_large(limit));
            }
            let mut remaining = size;
            while remaining > 0 {
                if pos == rb.0.len() {
                    rb.0.clear();
                    pos = 0;
                    rb.fill(&mut self.stream).await?;
                }
                let take = (rb.0.len() - pos).min(usize::try_from(remaining).unwrap_or(usize::MAX));
                keep(body, &rb.0[pos..pos + take]);
                pos += take;
                remaining -= take as u64;
                *len += take as u64;
            }
            let end = self.line(rb, &mut pos).await?;
            if !end.is_empty() {
                return Err(Failure::malformed("chunk data longer than its size"));
            }
        }
    }

    /// The next CRLF-terminated line at `rb[*pos..]`, reading as needed.
    /// Returns its range in `rb` without the CRLF and moves `pos` past it;
    /// may move the unread bytes to the front of `rb`.
    async fn line(
        &mut self,
        rb: &mut Scratch,
        pos: &mut usize,
    ) -> Result<std::ops::Range<usize>, Failure> {
        loop {
            if let Some(i) = rb.0[*pos..].windows(2).position(|w| w == b"\r\n") {
                let line = *pos..*pos + i;
                *pos += i + 2;
                return Ok(line);
            }
            if rb.0.len() - *pos > MAX_CHUNK_LINE {
                return Err(Failure::malformed("chunk line too long"));
            }
            rb.0.drain(..*pos);
            *pos = 0;
            rb.fill(&mut self.stream).await?;
        }
    }

    /// A body delimited by the end of the connection, whose first bytes
    /// are `rb[pos..]`.
    /// `limit` bounds what is kept: one byte past it fails the exchange.
    async fn read_to_end(
        &mut self,
        body: &mut Option<PooledBuf>,
        rb: &mut Scratch,
        pos: usize,
        limit: u64,
    ) -> Result<u64, Failure> {
        let mut len = (rb.0.len() - pos) as u64;
        keep(body, &rb.0[pos..]);
        loop {
            if len > limit {
                return Err(Failure::too_large(limit));
            }
            rb.0.clear();
            let got = match body {
                Some(b) => {
                    let buf = b.vec_mut();
                    if buf.capacity() - buf.len() < READ_CHUNK / 4 {
                        buf.reserve(READ_CHUNK);
                    }
                    // Never more than one byte past the limit.
                    let room = usize::try_from(limit.saturating_sub(len).saturating_add(1))
                        .unwrap_or(usize::MAX);
                    self.stream.read_buf(&mut buf.limit(room)).await
                }
                None => self.stream.read_buf(&mut rb.0).await,
            };
            match got {
                Ok(0) => return Ok(len),
                Ok(k) => len += k as u64,
                Err(e) => return Err(Failure::io(&e)),
            }
        }
    }
}

async fn write(stream: &mut Stream, bytes: &[u8], sent: &mut usize) -> io::Result<()> {
    let mut at = 0;
    while at < bytes.len() {
        let n = stream.write(&bytes[at..]).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        at += n;
        *sent += n;
    }
    Ok(())
}

/// Write a request body, unless the server answers first (a 413 before
/// the upload is done, say): then stop and return false, so that the
/// answer is read rather than the upload failing against a closed socket.
async fn write_unless_answered(
    stream: &mut Stream,
    bytes: &[u8],
    sent: &mut usize,
) -> io::Result<bool> {
    let mut at = 0;
    while at < bytes.len() {
        let step =
            std::future::poll_fn(
                |cx| match Pin::new(&mut *stream).poll_write(cx, &bytes[at..]) {
                    Poll::Ready(written) => Poll::Ready(Some(written)),
                    Poll::Pending if stream.poll_answered(cx) => Poll::Ready(None),
                    Poll::Pending => Poll::Pending,
                },
            )
            .await;
        match step {
            None => return Ok(false),
            Some(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
            Some(Ok(n)) => {
                at += n;
                *sent += n;
            }
            Some(Err(e)) => return Err(e),
        }
    }
    Ok(true)
}

fn keep(body: &mut Option<PooledBuf>, bytes: &[u8]) {
    if let Some(b) = body {
        b.extend(bytes);
    }
}

/// A request as HTTP/1.1 writes it: the parts of its head, borrowed from
/// the test's request and its target, and its body. Written straight into
/// a pooled buffer, with no header map in between (the request path is
/// per request; see docs/architecture.md).
pub struct Outgoing<'a> {
    pub method: &'a Method,
    /// Origin form: `/path?query`.
    pub target: &'a str,
    /// The test's header fields, in its order; checked with
    /// [`check_header`] beforehand. Names go out in lower case.
    pub headers: &'a [(String, String)],
    /// `host`, added when the test set none.
    pub host: &'a str,
    /// `user-agent`, added when the test set none.
    pub user_agent: &'a [u8],
    /// The jar's cookies, after those of the test's `cookie` fields.
    pub cookie: Option<&'a str>,
    /// `authorization`, added when the test set none (the URL's userinfo).
    pub authorization: Option<&'a str>,
    pub body: &'a [u8],
}

impl Outgoing<'_> {
    fn header(&self, name: &str) -> impl Iterator<Item = &str> {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the test's comma-separated header `name` has `token`.
    fn has_token(&self, name: &str, token: &str) -> bool {
        self.header(name)
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }
}

/// Why a header field of the test cannot go out, if it cannot: the rules
/// of `http`'s `HeaderName` (a token) and `HeaderValue` (no control
/// characters but tab), which HTTP/2 requests go through.
pub fn check_header(name: &str, value: &str) -> Result<(), String> {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(format!("invalid header name {name:?}"));
    }
    if value.bytes().any(|b| (b < b' ' && b != b'\t') || b == 0x7f) {
        return Err(format!(
            "invalid value for header {}",
            name.to_ascii_lowercase()
        ));
    }
    Ok(())
}

/// Write the request line and header section of `req` to `out`. Returns
/// whether the body goes out chunked (the test set
/// `transfer-encoding: chunked` itself); otherwise a `content-length` is
/// added where the test set none and the method carries a body.
fn encode_head(out: &mut Vec<u8>, req: &Outgoing<'_>) -> bool {
    fn field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
        let at = out.len();
        out.extend_from_slice(name.as_bytes());
        out[at..].make_ascii_lowercase();
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(req.method.as_str().as_bytes());
    out.push(b' ');
    let target = if req.target.is_empty() {
        "/"
    } else {
        req.target
    };
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let (mut host, mut user_agent, mut authorization) = (false, false, false);
    let mut content_length = false;
    for (name, value) in req.headers {
        if name.eq_ignore_ascii_case("host") {
            host = true;
        } else if name.eq_ignore_ascii_case("user-agent") {
            user_agent = true;
        } else if name.eq_ignore_ascii_case("content-length") {
            content_length = true;
        } else if name.eq_ignore_ascii_case("authorization") {
            authorization = true;
        } else if name.eq_ignore_ascii_case("cookie") && req.cookie.is_some() {
            // Joined below into one field with the jar's.
            continue;
        }
        field(out, name, value.as_bytes());
    }
    if !host {
        field(out, "host", req.host.as_bytes());
    }
    if !user_agent {
        field(out, "user-agent", req.user_agent);
    }
    if let (false, Some(auth)) = (authorization, req.authorization) {
        field(out, "authorization", auth.as_bytes());
    }
    if let Some(jar) = req.cookie {
        // One `cookie` field (RFC 6265): every one of the test's, in
        // order, then the jar's.
        out.extend_from_slice(b"cookie: ");
        for value in req.header("cookie") {
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"; ");
        }
        out.extend_from_slice(jar.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let chunked = req.has_token("transfer-encoding", "chunked");
    let carries_body =
        !req.body.is_empty() || matches!(*req.method, Method::POST | Method::PUT | Method::PATCH);
    if !chunked && carries_body && !content_length {
        field(out, "content-length", req.body.len().to_string().as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    chunked
}

/// A parsed response head.
struct Head {
    status: u16,
    http10: bool,
    headers: Headers,
    /// What framing and keep-alive depend on.
    fields: Fields,
    /// Its length in bytes, blank line included.
    len: usize,
}

/// What the framing and keep-alive rules read from a response's header
/// fields, gathered in the head's one parse.
#[derive(Debug)]
struct Fields {
    /// Whether there is a `transfer-encoding`, and whether its last
    /// coding is chunked.
    transfer_encoding: bool,
    chunked_last: bool,
    /// The `content-length`, or why it cannot be used.
    length: Result<Option<u64>, &'static str>,
    /// `connection` tokens.
    close: bool,
    keep_alive: bool,
    /// The [`Headers::note`] bits of the names seen.
    noted: u8,
}

impl Fields {
    fn new() -> Fields {
        Fields {
            transfer_encoding: false,
            chunked_last: false,
            length: Ok(None),
            close: false,
            keep_alive: false,
            noted: 0,
        }
    }

    fn add(&mut self, name: &str, value: &[u8]) {
        let tokens = || {
            std::str::from_utf8(value)
                .into_iter()
                .flat_map(|v| v.split(','))
                .map(str::trim)
        };
        if name.eq_ignore_ascii_case("transfer-encoding") {
            self.transfer_encoding = true;
            // Chunked must be the last coding; otherwise the body runs
            // to the end of the connection.
            if let Some(last) = tokens().rfind(|c| !c.is_empty()) {
                self.chunked_last = last.eq_ignore_ascii_case("chunked");
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            for part in value.split(|&b| b == b',') {
                let n = std::str::from_utf8(part)
                    .ok()
                    .map(str::trim)
                    .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|s| s.parse::<u64>().ok());
                self.length = match (self.length, n) {
                    (Err(e), _) => Err(e),
                    (_, None) => Err("invalid content-length"),
                    (Ok(Some(l)), Some(n)) if l != n => Err("conflicting content-length values"),
                    (Ok(_), Some(n)) => Ok(Some(n)),
                };
            }
        } else if name.eq_ignore_ascii_case("connection") {
            for t in tokens() {
                self.close |= t.eq_ignore_ascii_case("close");
                self.keep_alive |= t.eq_ignore_ascii_case("keep-alive");
            }
        } else {
            self.noted |= Headers::note(name);
        }
    }
}

/// The response head at the start of `buf`, or `None` when it is not
/// complete yet.
fn parse_head(buf: &[u8]) -> Result<Option<Head>, Failure> {
    parse_response(buf, |parsed, status| match status {
        httparse::Status::Complete(len) => head_of(buf, parsed, len).map(Some),
        httparse::Status::Partial => Ok(None),
    })
    .map_err(|e| match e {
        httparse::Error::TooManyHeaders => {
            Failure::malformed(format!("more than {MAX_FIELDS} header fields"))
        }
        e => Failure::malformed(e),
    })?
}

/// The [`Head`] of a complete parse of `buf`'s first `len` bytes.
fn head_of(buf: &[u8], parsed: &httparse::Response<'_, '_>, len: usize) -> Result<Head, Failure> {
    let status = parsed
        .code
        .and_then(|c| StatusCode::from_u16(c).ok())
        .ok_or_else(|| Failure::malformed("invalid status code"))?
        .as_u16();
    // httparse checked the names (tokens) and values (no control
    // characters), as `http`'s types would.
    let mut facts = Fields::new();
    for field in parsed.headers.iter() {
        facts.add(field.name, field.value);
    }
    Ok(Head {
        status,
        http10: parsed.version == Some(0),
        // One copy of the head, read again only if someone asks.
        headers: Headers::from_head(Bytes::copy_from_slice(&buf[..len]), facts.noted),
        fields: facts,
        len,
    })
}

/// How the body of a response with `status` to `method` is delimited
/// (RFC 9112, section 6.3).
fn framing(method: &Method, status: u16, fields: &Fields) -> Result<Framing, Failure> {
    if *method == Method::HEAD || (100..200).contains(&status) || status == 204 || status == 304 {
        return Ok(Framing::Empty);
    }
    if fields.transfer_encoding {
        return Ok(if fields.chunked_last {
            Framing::Chunked
        } else {
            Framing::UntilClose
        });
    }
    Ok(match fields.length.map_err(Failure::malformed)? {
        Some(0) => Framing::Empty,
        Some(n) => Framing::Length(n),
        None => Framing::UntilClose,
    })
}

/// The size of a chunk from its size line (extensions ignored).
fn chunk_size(line: &[u8]) -> Result<u64, Failure> {
    let hex = line.split(|&b| b == b';').next().unwrap_or_default();
    let hex = std::str::from_utf8(hex)
        .map(str::trim)
        .map_err(|_| Failure::malformed("invalid chunk size"))?;
    if hex.is_empty() || hex.len() > 16 {
        return Err(Failure::malformed("invalid chunk size"));
    }
    u64::from_str_radix(hex, 16).map_err(|_| Failure::malformed("invalid chunk size"))
}

/// Whether a failed request may go out again on a fresh connection: only
/// when the server cannot have acted on it, or when acting twice does no
/// harm (the methods Go's client replays, as k6 does).
pub fn may_retry(method: &Method, failure: &Failure) -> bool {
    failure.nothing_sent
        || (failure.nothing_received
            && matches!(
                *method,
                Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
            ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::socket::{IoMarks, MeteredIo};
    use http::header::{HeaderName, HeaderValue};
    use tokio::net::{TcpListener, TcpStream};

    /// A thread's scratch buffers that sat idle through a period are
    /// freed; as many as were in use at once during it stay.
    #[test]
    fn idle_scratch_buffers_are_freed_after_a_period() {
        let mut p = ScratchPool {
            free: (0..5).map(|_| Vec::with_capacity(8)).collect(),
            low: 0,
            returns: 0,
            at: 0,
        };
        // The first period saw none idle: nothing goes.
        p.trim(TRIM_PERIOD_NS);
        assert_eq!(p.free.len(), 5);
        let (a, b) = (p.pop().unwrap(), p.pop().unwrap());
        p.push(a);
        p.push(b);
        p.trim(TRIM_PERIOD_NS + 1);
        assert_eq!(p.free.len(), 5, "trimmed before the period was over");
        p.trim(2 * TRIM_PERIOD_NS);
        assert_eq!(p.free.len(), 2);
    }

    /// What the scripted server does for one request: write these pieces
    /// (one write each, a pause between), then maybe close.
    struct Reply {
        pieces: Vec<Vec<u8>>,
        close: bool,
    }

    fn reply(pieces: &[&[u8]], close: bool) -> Reply {
        Reply {
            pieces: pieces.iter().map(|p| p.to_vec()).collect(),
            close,
        }
    }

    /// Read a request head off `sock` (and whatever came with it); false
    /// when the client closed first.
    async fn read_head(sock: &mut TcpStream) -> bool {
        let mut seen = Vec::new();
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            let mut buf = [0u8; 1024];
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        true
    }

    /// A server on loopback that answers the requests of one connection
    /// with `replies`, in order, and a client connection to it.
    async fn scripted(replies: Vec<Reply>) -> H1Conn {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.expect("accept");
            for r in replies {
                if !read_head(&mut sock).await {
                    return;
                }
                for piece in &r.pieces {
                    sock.write_all(piece).await.expect("write");
                    sock.flush().await.expect("flush");
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                }
                if r.close {
                    return;
                }
            }
            // Hold the connection open until the client is done.
            let mut buf = [0u8; 16];
            let _ = sock.read(&mut buf).await;
        });
        let stream = TcpStream::connect(addr).await.expect("connect");
        H1Conn::new(Stream::Plain(MeteredIo::new(
            stream,
            Arc::new(IoMarks::default()),
        )))
    }

    fn get(method: &Method) -> Outgoing<'_> {
        Outgoing {
            method,
            target: "/x",
            headers: &[],
            host: "test",
            user_agent: b"wload-test",
            cookie: None,
            authorization: None,
            body: b"",
        }
    }

    fn text(r: &Received) -> &[u8] {
        r.body.as_ref().map_or(&[][..], |b| b.as_slice())
    }

    #[tokio::test]
    async fn chunked_interim_and_sized_responses_share_a_connection() {
        let pool = BodyPool::new(8);
        let mut conn = scripted(vec![
            // Chunked, split mid-line, with an extension and a trailer.
            reply(
                &[
                    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r",
                    b"\nhello\r\n6\r\n wo",
                    b"rld\r\n0\r\nX-Trailer: t\r\n\r\n",
                ],
                false,
            ),
            // An interim response before the real one.
            reply(
                &[b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 3\r\n\r\nabc"],
                false,
            ),
            // HEAD: a length, but no body follows.
            reply(&[b"HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n"], false),
        ])
        .await;
        let r = conn
            .exchange(&get(&Method::GET), Some(&pool), u64::MAX)
            .await
            .expect("chunked");
        assert_eq!(
            (r.status, text(&r), r.body_len),
            (200, &b"hello world"[..], 11)
        );
        assert!(conn.check_idle());
        let r = conn
            .exchange(&get(&Method::GET), Some(&pool), u64::MAX)
            .await
            .expect("1xx");
        assert_eq!((r.status, text(&r)), (201, &b"abc"[..]));
        assert!(conn.check_idle());
        let r = conn
            .exchange(&get(&Method::HEAD), Some(&pool), u64::MAX)
            .await
            .expect("head");
        assert_eq!((r.status, r.body_len), (200, 0));
        assert!(conn.is_reusable());
    }

    #[tokio::test]
    async fn large_bodies_arrive_whole_kept_or_counted() {
        let body: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let mut resp = b"HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\n".to_vec();
        resp.extend_from_slice(&body);
        let pool = BodyPool::new(8);
        let mut conn = scripted(vec![reply(&[&resp], false), reply(&[&resp], false)]).await;
        let r = conn
            .exchange(&get(&Method::GET), Some(&pool), u64::MAX)
            .await
            .expect("kept");
        assert!(text(&r) == body.as_slice());
        let r = conn
            .exchange(&get(&Method::GET), None, u64::MAX)
            .await
            .expect("discarded");
        assert_eq!((r.body.is_none(), r.body_len), (true, 1_000_000));
        assert!(conn.check_idle());
    }

    #[tokio::test]
    async fn connections_close_when_the_response_says_so() {
        let pool = BodyPool::new(8);
        // HTTP/1.0 without keep-alive, body delimited by the close.
        let mut conn = scripted(vec![reply(
            &[b"HTTP/1.0 200 OK\r\n\r\nuntil ", b"close"],
            true,
        )])
        .await;
        let r = conn
            .exchange(&get(&Method::GET), Some(&pool), u64::MAX)
            .await
            .expect("1.0");
        assert_eq!((r.http10, text(&r)), (true, &b"until close"[..]));
        assert!(!conn.is_reusable());

        let mut conn = scripted(vec![reply(
            &[b"HTTP/1.1 200 OK\r\nConnection: close\r\ncontent-length: 2\r\n\r\nok"],
            true,
        )])
        .await;
        conn.exchange(&get(&Method::GET), Some(&pool), u64::MAX)
            .await
            .expect("close");
        assert!(!conn.is_reusable());

        // A kept-alive connection the server closes while idle.
        let mut conn = scripted(vec![reply(&[b"HTTP/1.1 204 No Content\r\n\r\n"], true)]).await;
        conn.exchange(&get(&Method::GET), Some(&pool), u64::MAX)
            .await
            .expect("204");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!conn.check_idle());
    }

    /// How a GET fails when the server answers with `pieces` and closes;
    /// and the connection after it.
    async fn failed_get(pieces: &[&[u8]]) -> (Failure, H1Conn) {
        let pool = BodyPool::new(8);
        let mut conn = scripted(vec![reply(pieces, true)]).await;
        let failure = conn
            .exchange(&get(&Method::GET), Some(&pool), u64::MAX)
            .await
            .err()
            .expect("the exchange fails");
        (failure, conn)
    }

    #[tokio::test]
    async fn cut_and_garbled_responses_fail_with_codes() {
        let (f, conn) = failed_get(&[b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf"]).await;
        assert_eq!(f.error.code, ErrorCode::ConnectionReset, "{}", f.error);
        assert!(!f.nothing_received && !conn.is_reusable());

        let (f, _) =
            failed_get(&[b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n"]).await;
        assert_eq!(f.error.code, ErrorCode::Generic, "{}", f.error);

        // Closed before any byte of a response: safe to send again.
        let (f, _) = failed_get(&[]).await;
        assert!(f.nothing_received && may_retry(&Method::GET, &f));
    }

    /// How a GET whose body may be at most `limit` bytes fails against
    /// a server that answers with `pieces` and closes.
    async fn limited_get(pieces: &[&[u8]], limit: u64) -> Failure {
        let pool = BodyPool::new(8);
        let mut conn = scripted(vec![reply(pieces, true)]).await;
        conn.exchange(&get(&Method::GET), Some(&pool), limit)
            .await
            .err()
            .expect("the exchange fails")
    }

    #[tokio::test]
    async fn kept_bodies_past_the_limit_fail_however_they_are_framed() {
        let sized = limited_get(&[b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\n"], 10).await;
        assert_eq!(
            sized.error.code,
            ErrorCode::ResponseTooLarge,
            "{}",
            sized.error
        );
        let chunked = limited_get(
            &[b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n6\r\nhello \r\n6\r\nworld!\r\n0\r\n\r\n"],
            10,
        )
        .await;
        assert_eq!(chunked.error.code, ErrorCode::ResponseTooLarge);
        let until_close = limited_get(&[b"HTTP/1.0 200 OK\r\n\r\nhello ", b"world!"], 10).await;
        assert_eq!(until_close.error.code, ErrorCode::ResponseTooLarge);
        // Exactly the limit is fine.
        let pool = BodyPool::new(8);
        let mut conn = scripted(vec![reply(&[b"HTTP/1.0 200 OK\r\n\r\nhello worl"], true)]).await;
        let r = conn
            .exchange(&get(&Method::GET), Some(&pool), 10)
            .await
            .expect("10 bytes");
        assert_eq!(text(&r), b"hello worl");
        // Discarded bodies hold nothing, so they are not limited.
        let mut conn = scripted(vec![reply(
            &[b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\nhello world"],
            true,
        )])
        .await;
        let r = conn
            .exchange(&get(&Method::GET), None, 10)
            .await
            .expect("discarded");
        assert_eq!(r.body_len, 11);
    }

    #[tokio::test]
    async fn endless_interim_responses_and_trailers_are_refused() {
        let flood = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(MAX_INTERIM + 1);
        let f = limited_get(&[&flood], u64::MAX).await;
        assert!(f.error.message.contains("interim"), "{}", f.error);
        // As many as Go's client takes still work.
        let mut ok = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(MAX_INTERIM);
        ok.extend_from_slice(b"HTTP/1.1 204 No Content\r\n\r\n");
        let pool = BodyPool::new(8);
        let mut conn = scripted(vec![reply(&[&ok], true)]).await;
        let r = conn
            .exchange(&get(&Method::GET), Some(&pool), u64::MAX)
            .await
            .expect("five interim responses");
        assert_eq!(r.status, 204);
        let mut trailers = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n".to_vec();
        for i in 0..MAX_TRAILERS / 16 {
            trailers.extend_from_slice(format!("x-t: {i:>10}\r\n").as_bytes());
        }
        let f = limited_get(&[&trailers], u64::MAX).await;
        assert!(f.error.message.contains("trailer"), "{}", f.error);
    }

    /// A server that answers 413 as soon as it has the head, and closes
    /// without reading the body: the client sees the 413, not a failed
    /// upload.
    #[tokio::test]
    async fn an_answer_before_the_upload_ends_is_the_response() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.expect("accept");
            if !read_head(&mut sock).await {
                return;
            }
            let _ = sock
                .write_all(b"HTTP/1.1 413 Payload Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
                .await;
            // Hold the socket (unread body and all) until the client is
            // done, so that the answer, not a reset, is what it finds.
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        });
        let stream = TcpStream::connect(addr).await.expect("connect");
        let mut conn = H1Conn::new(Stream::Plain(MeteredIo::new(
            stream,
            Arc::new(IoMarks::default()),
        )));
        let body = vec![b'x'; 64 << 20];
        let req = Outgoing {
            body: &body,
            ..get(&Method::POST)
        };
        let pool = BodyPool::new(8);
        let r = tokio::time::timeout(
            std::time::Duration::from_secs(4),
            conn.exchange(&req, Some(&pool), u64::MAX),
        )
        .await
        .expect("the answer ends the upload")
        .expect("a response");
        assert_eq!(r.status, 413);
        assert!(!conn.is_reusable());
    }

    fn head_of(req: Outgoing<'_>) -> (String, bool) {
        let mut out = Vec::new();
        let chunked = encode_head(&mut out, &req);
        (String::from_utf8(out).expect("ASCII head"), chunked)
    }

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn request_heads_carry_a_length_where_a_body_may_be() {
        let own = headers(&[("Host", "h:1"), ("X-Trace", "a")]);
        let plain = Outgoing {
            target: "/a?b=c",
            headers: &own,
            ..get(&Method::GET)
        };
        assert_eq!(
            head_of(plain).0,
            "GET /a?b=c HTTP/1.1\r\nhost: h:1\r\nx-trace: a\r\nuser-agent: wload-test\r\n\r\n"
        );
        let post = Outgoing {
            target: "/p",
            ..get(&Method::POST)
        };
        assert_eq!(
            head_of(post).0,
            "POST /p HTTP/1.1\r\nhost: test\r\nuser-agent: wload-test\r\ncontent-length: 0\r\n\r\n"
        );
        let put = Outgoing {
            body: b"xyz",
            ..get(&Method::PUT)
        };
        assert!(head_of(put).0.ends_with("content-length: 3\r\n\r\n"));
        let te = headers(&[("Transfer-Encoding", "chunked")]);
        let chunked = Outgoing {
            headers: &te,
            body: b"xyz",
            ..get(&Method::POST)
        };
        let (head, is_chunked) = head_of(chunked);
        assert!(is_chunked && !head.contains("content-length"));
    }

    #[test]
    fn the_jar_joins_the_tests_own_cookie_field() {
        let own = headers(&[("Cookie", "a=1"), ("cookie", "b=2"), ("User-Agent", "mine")]);
        let req = Outgoing {
            headers: &own,
            cookie: Some("s=3"),
            ..get(&Method::GET)
        };
        // Both of the test's cookie fields and the jar's, in one field.
        assert_eq!(
            head_of(req).0,
            "GET /x HTTP/1.1\r\nuser-agent: mine\r\nhost: test\r\ncookie: a=1; b=2; s=3\r\n\r\n"
        );
        let jar_only = Outgoing {
            cookie: Some("s=3"),
            ..get(&Method::GET)
        };
        assert!(head_of(jar_only).0.ends_with("cookie: s=3\r\n\r\n"));
        let no_jar = Outgoing {
            headers: &own,
            ..get(&Method::GET)
        };
        assert!(head_of(no_jar).0.contains("cookie: a=1\r\ncookie: b=2\r\n"));
    }

    #[test]
    fn userinfo_goes_out_as_authorization_unless_the_test_sets_one() {
        let from_url = Outgoing {
            authorization: Some("Basic dTpw"),
            ..get(&Method::GET)
        };
        assert!(
            head_of(from_url)
                .0
                .contains("authorization: Basic dTpw\r\n")
        );
        let own = headers(&[("Authorization", "Bearer t")]);
        let the_tests = Outgoing {
            headers: &own,
            authorization: Some("Basic dTpw"),
            ..get(&Method::GET)
        };
        let head = head_of(the_tests).0;
        assert!(head.contains("authorization: Bearer t\r\n") && !head.contains("Basic"));
    }

    #[test]
    fn header_fields_are_checked_as_http_does() {
        assert!(check_header("X-Ok", "a value\twith tab").is_ok());
        assert!(
            check_header("bad name", "v")
                .unwrap_err()
                .contains("invalid header name")
        );
        assert!(check_header("", "v").is_err());
        assert!(
            check_header("x", "a\r\nb")
                .unwrap_err()
                .contains("header x")
        );
        // What `http` refuses, HTTP/2 requests could not carry either.
        for (n, v) in [("X-A", "ok"), ("x:y", "v"), ("x", "\u{7f}")] {
            let ours = check_header(n, v).is_ok();
            let theirs =
                HeaderName::from_bytes(n.as_bytes()).is_ok() && HeaderValue::from_str(v).is_ok();
            assert_eq!(ours, theirs, "{n:?}: {v:?}");
        }
    }

    #[test]
    fn heads_parse_whole_or_not_at_all() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\nX-A: 2\r\n\r\nhello";
        assert!(parse_head(&raw[..20]).expect("valid so far").is_none());
        let head = parse_head(raw).expect("valid").expect("complete");
        assert_eq!(
            (head.status, head.http10, head.len),
            (200, false, raw.len() - 5)
        );
        assert_eq!(head.headers.get_all("x-a").len(), 2);
        assert_eq!(head.fields.length, Ok(Some(5)));
        assert!(parse_head(b"HTTP/1.1 2x0 OK\r\n\r\n").is_err());
        // Past the stack array, up to the limit, and past it.
        let many = |n: usize| {
            let mut raw = b"HTTP/1.1 200 OK\r\n".to_vec();
            for i in 0..n {
                raw.extend_from_slice(format!("x-{i}: {i}\r\n").as_bytes());
            }
            raw.extend_from_slice(b"\r\n");
            raw
        };
        let head = parse_head(&many(MAX_FIELDS))
            .expect("valid")
            .expect("whole");
        assert_eq!(head.headers.get("x-99"), Some(&b"99"[..]));
        assert!(parse_head(&many(MAX_FIELDS + 1)).is_err());
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
    }

    #[test]
    fn bodies_are_framed_as_rfc_9112_says() {
        let h = |pairs: &[(&str, &str)]| {
            let mut f = Fields::new();
            for (k, v) in pairs {
                f.add(k, v.as_bytes());
            }
            f
        };
        let get = Method::GET;
        let len = h(&[("content-length", "10")]);
        assert_eq!(framing(&get, 200, &len).ok(), Some(Framing::Length(10)));
        assert_eq!(framing(&Method::HEAD, 200, &len).ok(), Some(Framing::Empty));
        assert_eq!(framing(&get, 304, &len).ok(), Some(Framing::Empty));
        assert_eq!(framing(&get, 204, &h(&[])).ok(), Some(Framing::Empty));
        assert_eq!(framing(&get, 200, &h(&[])).ok(), Some(Framing::UntilClose));
        let te = h(&[
            ("transfer-encoding", "gzip, chunked"),
            ("content-length", "3"),
        ]);
        assert_eq!(framing(&get, 200, &te).ok(), Some(Framing::Chunked));
        let te = h(&[("transfer-encoding", "chunked, gzip")]);
        assert_eq!(framing(&get, 200, &te).ok(), Some(Framing::UntilClose));
        assert!(framing(&get, 200, &h(&[("content-length", "1, 2")])).is_err());
        assert!(framing(&get, 200, &h(&[("content-length", "-1")])).is_err());
        assert_eq!(
            framing(&get, 200, &h(&[("content-length", "7, 7")])).ok(),
            Some(Framing::Length(7))
        );
    }

    #[test]
    fn chunk_sizes_are_hex_with_optional_extensions() {
        assert_eq!(chunk_size(b"1a").ok(), Some(26));
        assert_eq!(chunk_size(b"FF;name=value").ok(), Some(255));
        assert!(chunk_size(b"").is_err());
        assert!(chunk_size(b"zz").is_err());
        assert!(chunk_size(b"11111111111111111").is_err());
    }

    #[test]
    fn only_requests_the_server_cannot_have_seen_or_safe_ones_retry() {
        let f = |sent: bool, received: bool| Failure {
            error: HttpError::new(ErrorCode::ConnectionReset, "x"),
            nothing_sent: !sent,
            nothing_received: !received,
        };
        assert!(may_retry(&Method::POST, &f(false, false)));
        assert!(!may_retry(&Method::POST, &f(true, false)));
        assert!(may_retry(&Method::GET, &f(true, false)));
        assert!(!may_retry(&Method::GET, &f(true, true)));
    }
}
