//! One keep-alive connection (HTTP/1.1 or HTTP/2, plain or TLS) over a
//! metered socket ([`super::socket`]); [`Conn::begin_request`] resets the
//! socket's marks for the request about to go out. HTTP/1.1 is spoken by
//! [`super::h1`] in the requesting task; HTTP/2 by hyper, whose connection
//! driver runs as a task of its own.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http2;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::error::HttpError;
use super::h1::H1Conn;
use super::socket::{IoMarks, MeteredIo, Stream, now_ns};
use super::tls::version_tag;

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
    ///
    /// The TLS and HTTP/2 handshakes are boxed: their futures would
    /// otherwise size every dial's, plain HTTP/1.1 ones included, and
    /// thousands of VUs connect at once when a run starts (what their
    /// dials hold then stays in the allocator's arenas afterwards).
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
                    Box::pin(handshake_h2(io)).await?
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
                let tls = Box::pin(connector.connect(name, io))
                    .await
                    .map_err(|e| HttpError::from_tls(&e, host))?;
                let tls_ns = now_ns() - started;
                let session = tls.get_ref().1;
                let h2 = session.alpn_protocol() == Some(b"h2");
                let tls_version = version_tag(session.protocol_version());
                let sender = if h2 {
                    Box::pin(handshake_h2(tls)).await?
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
        self.marks.request_sent.store(0, Relaxed);
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
