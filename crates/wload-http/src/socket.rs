//! The metered socket: a TCP stream that counts bytes both ways and
//! records when the last write and the first read of the current request
//! happened, and the byte stream a connection speaks over (the metered
//! socket, or TLS above it).
//!
//! [`MeteredIo`] sits right on the TCP stream; [`super::conn::Conn`]
//! resets its marks when a request begins. HTTP/1.1 without pipelining
//! has one request in flight per connection, so the marks belong to
//! exactly one request. An HTTP/2 connection carries many streams at
//! once; there only the byte counts are used. TLS sits above the metered
//! socket, so byte counts are wire bytes (records, handshake and all) and
//! compressed bodies count as sent.
//!
//! Both HTTP/1.1 ([`super::h1`]) and the connection ([`super::conn`]) are
//! built on this module, which knows neither.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The monotonic clock (`Instant`'s) in nanoseconds: readings that fit in
/// an atomic. Read straight from the vDSO, six times per request: going
/// through `Instant::elapsed` (a `Duration` subtraction and a 128-bit
/// conversion per read) cost several times the read itself.
#[inline]
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
    /// When the whole request of the current exchange was written (0:
    /// not yet), so that a failure can say in which phase it happened.
    pub request_sent: AtomicU64,
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
    /// An in-memory pipe in place of a socket, for [`crate::fuzzing`]:
    /// the fuzz targets and property tests feed the client a server's
    /// bytes with reads split where they choose, deterministically and
    /// without a socket per case. Never made by the client itself.
    Memory(tokio::io::DuplexStream),
}

impl Stream {
    /// Whether the peer has sent something (or closed) while a write
    /// waits. Plain sockets only: on TLS, telling would mean reading
    /// records, so a TLS upload runs to its end or its error.
    pub fn poll_answered(&self, cx: &mut Context<'_>) -> bool {
        match self {
            Stream::Plain(io) => io.inner.poll_read_ready(cx).is_ready(),
            Stream::Tls(_) | Stream::Memory(_) => false,
        }
    }

    /// The marks of the socket under this stream.
    pub fn marks(&self) -> &IoMarks {
        match self {
            Stream::Plain(io) => &io.marks,
            Stream::Tls(tls) => &tls.get_ref().0.marks,
            // The fuzzers' pipe measures nothing.
            Stream::Memory(_) => {
                static UNMEASURED: IoMarks = IoMarks {
                    read: AtomicU64::new(0),
                    written: AtomicU64::new(0),
                    last_write: AtomicU64::new(0),
                    first_read: AtomicU64::new(0),
                    request_sent: AtomicU64::new(0),
                };
                &UNMEASURED
            }
        }
    }

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
            Stream::Memory(pipe) => Pin::new(pipe).poll_read(cx, buf),
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
            Stream::Memory(pipe) => Pin::new(pipe).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(io) => Pin::new(io).poll_flush(cx),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
            Stream::Memory(pipe) => Pin::new(pipe).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(io) => Pin::new(io).poll_shutdown(cx),
            Stream::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
            Stream::Memory(pipe) => Pin::new(pipe).poll_shutdown(cx),
        }
    }
}
