//! One keep-alive connection and the socket wrapper that times it.
//!
//! [`MeteredIo`] sits between hyper and the TCP stream. It counts bytes
//! both ways and records when the last write and the first read of the
//! current request happened; [`Conn::begin_request`] resets those marks.
//! HTTP/1.1 without pipelining has one request in flight per connection,
//! so the marks belong to exactly one request.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Nanoseconds since the first call in this process: a cheap monotonic
/// clock whose readings fit in an atomic.
pub fn now_ns() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
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

impl IoMarks {
    fn reset(&self) {
        self.read.store(0, Relaxed);
        self.written.store(0, Relaxed);
        self.last_write.store(0, Relaxed);
        self.first_read.store(0, Relaxed);
    }
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
    fn note_write(&self, n: usize) {
        if n > 0 {
            self.marks.written.fetch_add(n as u64, Relaxed);
            self.marks.last_write.store(now_ns(), Relaxed);
        }
    }
}

/// A kept-alive HTTP/1.1 connection owned by one VU.
pub struct Conn {
    pub sender: http1::SendRequest<Full<Bytes>>,
    pub marks: Arc<IoMarks>,
    /// False until the connection has carried one request.
    pub reused: bool,
}

impl Conn {
    /// Open a connection to `addr` and start its hyper driver task.
    pub async fn open(stream: TcpStream) -> Result<Conn, hyper::Error> {
        let _ = stream.set_nodelay(true);
        let marks = Arc::new(IoMarks::default());
        let io = MeteredIo {
            inner: stream,
            marks: marks.clone(),
        };
        let (sender, driver) = http1::Builder::new().handshake(TokioIo::new(io)).await?;
        // The driver runs until the connection closes; its errors surface
        // through the request that was in flight.
        tokio::spawn(async move {
            let _ = driver.await;
        });
        Ok(Conn {
            sender,
            marks,
            reused: false,
        })
    }

    /// Clear the marks before a request goes out on this connection.
    pub fn begin_request(&self) {
        self.marks.reset();
    }

    /// Whether the connection can take another request.
    pub fn is_open(&self) -> bool {
        !self.sender.is_closed()
    }
}
