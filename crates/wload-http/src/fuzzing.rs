//! Entry points for the fuzz targets (`fuzz/`) and the property tests:
//! the HTTP/1.1 client's whole response path — head, framing, chunked
//! bodies and trailers, 1xx, bodies delimited by the close, keep-alive —
//! fed a server's bytes.
//!
//! Not an API (hidden from the docs): it exists so that harnesses outside
//! the crate reach the real read loop of [`crate::h1`] without the crate
//! opening its internals. The server is a script on the other end of an
//! in-memory pipe ([`Stream::Memory`]) whose capacity bounds every read
//! of the client, so a case splits the response wherever it likes and
//! runs the same way every time; no runtime, socket or timer is involved.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use http::Method;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf};

use crate::h1::{H1Conn, Outgoing};
use crate::pool::BodyPool;
use crate::socket::Stream;

/// How the scripted server's bytes reach the client.
#[derive(Debug, Clone, Copy)]
pub struct Delivery {
    /// Most bytes one read of the client returns (the pipe's capacity,
    /// at least 1): 1 splits every byte from the next.
    pub read_size: usize,
    /// Send HEAD rather than GET (its responses have no body).
    pub head: bool,
    /// Keep bodies, or count and drop them as in discard mode.
    pub keep_body: bool,
}

/// One response as the client read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub http10: bool,
    /// Lower-case names, values as text (as the guest sees them).
    pub headers: Vec<(String, String)>,
    /// `None` in discard mode.
    pub body: Option<Vec<u8>>,
    pub body_len: u64,
    /// Whether the connection could carry another request afterwards.
    pub reusable: bool,
}

/// What became of a connection's exchanges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The responses read, in order.
    pub responses: Vec<Response>,
    /// The failure that ended the last exchange, if one did.
    pub error: Option<String>,
}

/// Send requests on one connection whose server answers the n-th request
/// with `replies[n]` (each written once the request head has arrived),
/// then closes. A request goes out while the connection stays reusable
/// and idle and replies are left. A server waiting for a request the
/// client will not send (the client waits for a close, say) hangs up, as
/// a real one eventually would.
///
/// # Panics
///
/// When the client neither finishes nor waits on the server (a loop of
/// its own): that is a bug the fuzzers are there to find.
pub fn h1_exchanges(replies: &[&[u8]], how: Delivery) -> Outcome {
    let (client_end, server_end) = tokio::io::duplex(how.read_size.max(1));
    let progress = Rc::new(Cell::new(0u64));
    let server = serve(
        Counted {
            inner: server_end,
            progress: Rc::clone(&progress),
        },
        replies,
    );
    let client = exchanges(client_end, replies.len(), how);
    drive(client, server, &progress)
}

/// Poll the client and the server in turn until the client is done. The
/// pipe is their only link, so when the server does no I/O right after
/// the client has gone as far as it can, neither will move again: the
/// server is dropped, which closes its end.
fn drive<C, S>(client: C, server: S, progress: &Cell<u64>) -> Outcome
where
    C: Future<Output = Outcome>,
    S: Future<Output = ()>,
{
    let mut cx = Context::from_waker(Waker::noop());
    let mut client = pin!(client);
    let mut server = Some(Box::pin(server));
    // Each poll alone moves bytes or ends a read with end-of-stream;
    // millions of polls with no server is a client going round in circles.
    let mut alone = 0u32;
    loop {
        if let Poll::Ready(out) = client.as_mut().poll(&mut cx) {
            return out;
        }
        match server.as_mut() {
            Some(s) => {
                let before = progress.get();
                match s.as_mut().poll(&mut cx) {
                    Poll::Ready(()) => server = None,
                    Poll::Pending if progress.get() == before => server = None,
                    Poll::Pending => {}
                }
            }
            None => {
                alone += 1;
                assert!(alone < 1_000_000, "the HTTP/1.1 client loops without I/O");
            }
        }
    }
}

/// The body limit of the fuzzed exchanges.
const FUZZ_BODY_LIMIT: u64 = 64 << 10;

/// The client's side: up to `max` exchanges while the connection allows.
async fn exchanges(end: DuplexStream, max: usize, how: Delivery) -> Outcome {
    let pool = BodyPool::new(4);
    let method = if how.head { Method::HEAD } else { Method::GET };
    let req = Outgoing {
        method: &method,
        target: "/fuzz",
        headers: &[],
        host: "fuzz.test",
        user_agent: b"wload-fuzz",
        cookie: None,
        authorization: None,
        body: b"",
    };
    let mut conn = H1Conn::new(Stream::Memory(end));
    let mut out = Outcome {
        responses: Vec::new(),
        error: None,
    };
    for i in 0..max {
        // As the client's pool does before reusing a connection.
        if i > 0 && !conn.check_idle() {
            break;
        }
        // A small limit, so that inputs reach the too-large paths too.
        match conn
            .exchange(&req, how.keep_body.then_some(&pool), FUZZ_BODY_LIMIT)
            .await
        {
            Ok(r) => out.responses.push(Response {
                status: r.status,
                http10: r.http10,
                headers: r.headers.to_list(),
                body: r.body.as_ref().map(|b| b.as_slice().to_vec()),
                body_len: r.body_len,
                reusable: conn.is_reusable(),
            }),
            Err(f) => {
                out.error = Some(f.error.to_string());
                break;
            }
        }
        if !conn.is_reusable() {
            break;
        }
    }
    out
}

/// The server's side: each reply once a request head has arrived.
/// Returning drops its end: the close.
async fn serve(mut end: Counted, replies: &[&[u8]]) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 512];
    for reply in replies {
        loop {
            if let Some(i) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                seen.drain(..i + 4);
                break;
            }
            match end.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        if end.write_all(reply).await.is_err() {
            return;
        }
    }
}

/// The server's end of the pipe, counting the bytes it moves: how
/// [`drive`] sees that the server did something.
struct Counted {
    inner: DuplexStream,
    progress: Rc<Cell<u64>>,
}

impl Counted {
    fn note(&self, n: usize) {
        self.progress.set(self.progress.get() + n as u64);
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let res = Pin::new(&mut self.inner).poll_read(cx, buf);
        // End of stream counts too: the server moves on to return.
        if res.is_ready() {
            self.note(buf.filled().len() - before + 1);
        }
        res
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let res = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(r) = &res {
            self.note(*r.as_ref().unwrap_or(&0) + 1);
        }
        res
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn how(read_size: usize) -> Delivery {
        Delivery {
            read_size,
            head: false,
            keep_body: true,
        }
    }

    #[test]
    fn replies_reach_the_client_split_as_asked() {
        let reply: &[u8] =
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nt: 1\r\n\r\n";
        for size in [1, 2, 7, 4096] {
            let out = h1_exchanges(&[reply, reply], how(size));
            assert_eq!(out.error, None, "read size {size}");
            assert_eq!(out.responses.len(), 2, "read size {size}");
            assert_eq!(out.responses[1].body.as_deref(), Some(&b"abc"[..]));
        }
    }

    #[test]
    fn a_body_until_the_close_ends_when_the_server_gives_up() {
        // The client waits for the close while the server waits for a
        // second request: the server hangs up, the body is whole.
        let reply: &[u8] = b"HTTP/1.1 200 OK\r\n\r\nall of it";
        let out = h1_exchanges(&[reply, reply], how(3));
        assert_eq!(out.error, None);
        assert_eq!(out.responses.len(), 1);
        assert_eq!(out.responses[0].body.as_deref(), Some(&b"all of it"[..]));
        assert!(!out.responses[0].reusable);
    }

    #[test]
    fn a_short_body_fails_instead_of_hanging() {
        let out = h1_exchanges(
            &[b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf"],
            how(64),
        );
        assert!(out.responses.is_empty());
        assert!(out.error.is_some_and(|e| e.contains("closed")));
    }
}
