//! One keep-alive connection (HTTP/1.1 or HTTP/2, plain or TLS) and the
//! socket wrapper that times it.
//!
//! [`MeteredIo`] sits right on the TCP stream. It counts bytes both ways
//! and records when the last write and the first read of the current
//! request happened; [`Conn::begin_request`] resets those marks. HTTP/1.1
//! without pipelining has one request in flight per connection, so the
//! marks belong to exactly one request. An HTTP/2 connection carries many
//! streams at once; there only the byte counts are used.
//!
//! TLS sits above the metered socket, so byte counts are wire bytes
//! (records, handshake and all) and compressed bodies count as sent.
//! HTTP/1.1 is spoken by [`super::h1`] in the requesting task; HTTP/2 by
//! hyper, whose connection driver runs as a task of its own.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::error::HttpError;
use super::h1::H1Conn;
use super::tls::version_tag;

/// The monotonic clock (`Instant`'s) in nanoseconds: readings that fit in
/// an atomic. Read straight from the vDSO, six times per request: going
/// through `Instant::elapsed` (a `Duration` subtraction and a 128-bit
/// conversion per read) cost several times the read itself.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to write; the clock
    // exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// Byte counts and timestamps of the request in flight on a connection.
#[derive(Debug, Default)]
pub struct IoMarks {
    pub read: AtomicU64,
    pub written: AtomicU64,
    /// `now_ns` of the last write, 0 when none yet.
    pub last_write: AtomicU64,
    /// `now_ns` of the first read that returned data, 0 when none yet.
    pub first_read: AtomicU64,
}

/// A TCP stream that reports to [`IoMarks`].
pub struct MeteredIo {
    inner: TcpStream,
    marks: Arc<IoMarks>,
}

impl AsyncRead for MeteredIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        if n > 0 {
            if self.marks.first_read.load(Relaxed) == 0 {
                self.marks.first_read.store(now_ns().max(1), Relaxed);
            }
            self.marks.read.fetch_add(n, Relaxed);
        }
        res
    }
}

impl AsyncWrite for MeteredIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = res {
            self.note_write(n);
        }
        res
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = res {
            self.note_write(n);
        }
        res
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl MeteredIo {
    pub fn new(inner: TcpStream, marks: Arc<IoMarks>) -> MeteredIo {
        MeteredIo { inner, marks }
    }

    fn note_write(&self, n: usize) {
        if n > 0 {
            self.marks.written.fetch_add(n as u64, Relaxed);
            self.marks.last_write.store(now_ns(), Relaxed);
        }
    }
}

/// A connection's byte stream: the metered socket, or TLS over it.
pub enum Stream {
    Plain(MeteredIo),
    Tls(Box<TlsStream<MeteredIo>>),
}

impl Stream {
    /// Wait until the socket has something to read (or failed). Plain
    /// sockets only: TLS may hold decrypted bytes the socket no longer
    /// shows, so there a read is the only way to know.
    pub async fn readable(&self) {
        if let Stream::Plain(io) = self {
            // The socket's own reader slot, as a read would use: `readable()`
            // queues a waiter under the socket's lock and takes it again to
            // leave. An error shows again on the read that follows.
            let _ = std::future::poll_fn(|cx| io.inner.poll_read_ready(cx)).await;
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(io) => Pin::new(io).poll_read(cx, buf),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(io) => Pin::new(io).poll_write(cx, buf),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(io) => Pin::new(io).poll_flush(cx),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(io) => Pin::new(io).poll_shutdown(cx),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
        }
    }
}

/// How a connection speaks HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    Http1,
    Http2,
}

impl Proto {
    /// The `proto` tag value, as k6 writes it.
    pub fn tag(self) -> &'static str {
        match self {
            Proto::Http1 => "HTTP/1.1",
            Proto::Http2 => "HTTP/2.0",
        }
    }
}

/// How requests go out: our HTTP/1.1 client, one request at a time; or
/// hyper's HTTP/2 handle, cloneable, whose requests become streams of one
/// connection.
pub enum Sender {
    H1(H1Conn),
    H2(http2::SendRequest<Full<Bytes>>),
}

/// A kept-alive connection owned by one VU.
pub struct Conn {
    pub sender: Sender,
    pub marks: Arc<IoMarks>,
    /// False until the connection has carried one request.
    pub reused: bool,
    /// Negotiated TLS version tag, `None` for plain TCP.
    pub tls_version: Option<&'static str>,
}

/// How to talk over a fresh TCP stream.
pub struct Handshake {
    /// TLS connector and server name, for `https`.
    pub tls: Option<(TlsConnector, ServerName<'static>)>,
    /// Speak HTTP/2 without TLS (h2c with prior knowledge).
    pub h2c: bool,
}

impl Conn {
    /// Set up HTTP (and TLS) on `stream`, starting hyper's driver task
    /// for HTTP/2.
    /// Returns the connection and the nanoseconds the TLS handshake took.
    pub async fn open(
        stream: TcpStream,
        how: Handshake,
        host: &str,
    ) -> Result<(Conn, u64), HttpError> {
        let _ = stream.set_nodelay(true);
        let marks = Arc::new(IoMarks::default());
        let io = MeteredIo::new(stream, marks.clone());
        match how.tls {
            None => {
                let sender = if how.h2c {
                    handshake_h2(io).await?
                } else {
                    Sender::H1(H1Conn::new(Stream::Plain(io)))
                };
                Ok((
                    Conn {
                        sender,
                        marks,
                        reused: false,
                        tls_version: None,
                    },
                    0,
                ))
            }
            Some((connector, name)) => {
                let started = now_ns();
                let tls = connector
                    .connect(name, io)
                    .await
                    .map_err(|e| HttpError::from_tls(&e, host))?;
                let tls_ns = now_ns() - started;
                let session = tls.get_ref().1;
                let h2 = session.alpn_protocol() == Some(b"h2");
                let tls_version = version_tag(session.protocol_version());
                let sender = if h2 {
                    handshake_h2(tls).await?
                } else {
                    Sender::H1(H1Conn::new(Stream::Tls(Box::new(tls))))
                };
                Ok((
                    Conn {
                        sender,
                        marks,
                        reused: false,
                        tls_version,
                    },
                    tls_ns,
                ))
            }
        }
    }

    pub fn proto(&self) -> Proto {
        match self.sender {
            Sender::H1(_) => Proto::Http1,
            Sender::H2(_) => Proto::Http2,
        }
    }

    /// Another handle on the same HTTP/2 connection; `None` on HTTP/1.1,
    /// whose connection serves one request at a time.
    pub fn share(&self) -> Option<Conn> {
        match &self.sender {
            Sender::H2(s) => Some(Conn {
                sender: Sender::H2(s.clone()),
                marks: self.marks.clone(),
                reused: true,
                tls_version: self.tls_version,
            }),
            Sender::H1(_) => None,
        }
    }

    /// Clear the timing marks before a request goes out on this
    /// HTTP/1.1 connection. Byte counts are taken (and zeroed) when a
    /// request ends, so that handshake bytes count for the request that
    /// opened the connection.
    pub fn begin_request(&self) {
        self.marks.last_write.store(0, Relaxed);
        self.marks.first_read.store(0, Relaxed);
    }

    /// Bytes written and read since the last call: this request's share.
    pub fn take_bytes(&self) -> (u64, u64) {
        (
            self.marks.written.swap(0, Relaxed),
            self.marks.read.swap(0, Relaxed),
        )
    }

    /// Whether the connection can take another request, as far as is
    /// known without looking at the socket.
    pub fn is_open(&self) -> bool {
        match &self.sender {
            Sender::H1(c) => c.is_reusable(),
            Sender::H2(s) => !s.is_closed(),
        }
    }

    /// [`Conn::is_open`], and for an idle HTTP/1.1 connection also that
    /// the server has not closed it meanwhile.
    pub fn check_idle(&mut self) -> bool {
        match &mut self.sender {
            Sender::H1(c) => c.check_idle(),
            Sender::H2(s) => !s.is_closed(),
        }
    }
}

async fn handshake_h2<I>(io: I) -> Result<Sender, HttpError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (sender, driver) = http2::Builder::new(TokioExecutor::new())
        .handshake(TokioIo::new(io))
        .await
        .map_err(|e| HttpError::from_hyper(&e))?;
    // The driver runs until the connection closes; its errors surface
    // through the requests in flight.
    tokio::spawn(async move {
        let _ = driver.await;
    });
    Ok(Sender::H2(sender))
}
