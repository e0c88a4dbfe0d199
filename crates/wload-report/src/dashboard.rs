//! `--dashboard`: the live page of a running test, served on 127.0.0.1
//! (port 5665 unless `--dashboard-port` says otherwise, as k6's web
//! dashboard; 0 takes a free one) by a small HTTP/1.1 server on plain
//! threads: `GET /` is the page (the report's page, drawn from frames),
//! `GET /events` the server-sent events it reads, `model` (everything so
//! far) on connecting, then a `frame` per output interval and `end`.
//! Only a loopback address is ever bound, and a request naming another
//! host (a DNS-rebinding page) is refused.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use crate::collect::{Collector, Shared, Timelines, lock, new_state};
use crate::html;

/// k6's web dashboard port.
pub const DEFAULT_PORT: u16 = 5665;

/// The longest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// How long a browser may take to send its request, or to take a frame.
const IO_TIMEOUT: Duration = Duration::from_secs(5);

/// The pages reading `/events`.
#[derive(Clone, Default)]
pub(crate) struct Clients {
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Clients {
    /// Send one event to every page; a page that cannot take it (closed,
    /// or not reading for `IO_TIMEOUT`) is dropped.
    pub fn send(&self, event: &str, data: &Value) {
        let text = format!("event: {event}\ndata: {data}\n\n");
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        streams.retain_mut(|s| {
            s.write_all(text.as_bytes())
                .and_then(|()| s.flush())
                .is_ok()
        });
    }

    fn add(&self, stream: TcpStream) {
        self.streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(stream);
    }
}

/// A running dashboard server.
pub struct Dashboard {
    addr: SocketAddr,
    state: Shared,
    clients: Clients,
}

impl Dashboard {
    /// Listen on 127.0.0.1:`port` and serve until the process ends.
    pub fn start(port: u16) -> Result<Dashboard> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).with_context(|| {
            format!(
                "cannot listen on 127.0.0.1:{port} for the dashboard; choose another \
                 --dashboard-port (0 takes a free one)"
            )
        })?;
        let addr = listener
            .local_addr()
            .context("cannot read the dashboard's address")?;
        let dashboard = Dashboard {
            addr,
            state: new_state(),
            clients: Clients::default(),
        };
        let (state, clients) = (dashboard.state.clone(), dashboard.clients.clone());
        std::thread::Builder::new()
            .name("wload-dashboard".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    let (state, clients) = (state.clone(), clients.clone());
                    // One thread per connection: a page that sends its
                    // request slowly holds up no other.
                    let _ = std::thread::Builder::new()
                        .name("wload-dashboard-conn".into())
                        .spawn(move || serve(stream, addr, &state, &clients));
                }
            })
            .context("cannot start the dashboard's server")?;
        Ok(dashboard)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The run's sink that feeds this dashboard (and keeps the timeline
    /// for `--report`).
    pub fn collector(&self) -> Result<(Collector, Timelines)> {
        Collector::with_clients(Some((self.clients.clone(), self.state.clone())))
    }
}

/// What a request asks for.
struct Request {
    method: String,
    path: String,
    host: Option<String>,
}

fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, target) = (first.next()?.to_owned(), first.next()?);
    let path = target.split('?').next().unwrap_or("").to_owned();
    let host = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("host"))
        .map(|(_, v)| v.trim().to_owned());
    Some(Request { method, path, host })
}

fn respond(stream: &mut TcpStream, status: &str, kind: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body));
}

/// Whether `host` names this server by a loopback name: a page of
/// another site that resolves its name to 127.0.0.1 sends its own.
fn host_ok(host: Option<&str>, addr: SocketAddr) -> bool {
    let port = addr.port();
    host.is_some_and(|h| h == format!("127.0.0.1:{port}") || h == format!("localhost:{port}"))
}

fn serve(mut stream: TcpStream, addr: SocketAddr, state: &Shared, clients: &Clients) {
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let Some(req) = read_request(&mut stream) else {
        return;
    };
    if !host_ok(req.host.as_deref(), addr) {
        respond(
            &mut stream,
            "403 Forbidden",
            "text/plain",
            b"the dashboard answers only to 127.0.0.1 and localhost\n",
        );
        return;
    }
    if req.method != "GET" {
        respond(
            &mut stream,
            "405 Method Not Allowed",
            "text/plain",
            b"GET only\n",
        );
        return;
    }
    match req.path.as_str() {
        "/" | "/index.html" => {
            let page = html::page(&json!({ "live": true, "title": "wload dashboard" }));
            respond(
                &mut stream,
                "200 OK",
                "text/html; charset=utf-8",
                page.as_bytes(),
            );
        }
        "/events" => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                        cache-control: no-store\r\nconnection: keep-alive\r\n\r\n";
            // The state is held from the model to the registration, as the
            // collector holds it from a point to its frame: the page gets
            // each point once.
            let s = lock(state);
            let model = s.model();
            let first = format!("{head}retry: 1000\nevent: model\ndata: {model}\n\n");
            if stream.write_all(first.as_bytes()).is_ok() {
                clients.add(stream);
            }
            drop(s);
        }
        _ => respond(
            &mut stream,
            "404 Not Found",
            "text/plain",
            b"not found: try /\n",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_host_names_are_served() {
        let addr: SocketAddr = "127.0.0.1:5665".parse().unwrap();
        assert!(host_ok(Some("127.0.0.1:5665"), addr));
        assert!(host_ok(Some("localhost:5665"), addr));
        assert!(!host_ok(Some("evil.example:5665"), addr));
        assert!(!host_ok(Some("127.0.0.1:80"), addr));
        assert!(!host_ok(None, addr));
    }

    #[test]
    fn port_zero_serves_the_page_and_the_model_event() {
        let d = Dashboard::start(0).unwrap();
        let port = d.addr().port();
        assert_ne!(port, 0);
        let get = |path: &str| {
            let mut s = TcpStream::connect(d.addr()).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            write!(s, "GET {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n").unwrap();
            s
        };
        let mut page = String::new();
        get("/").read_to_string(&mut page).unwrap();
        assert!(page.starts_with("HTTP/1.1 200 OK"), "{page:.200}");
        assert!(
            page.contains("uPlot"),
            "the page embeds its charting library"
        );
        let mut events = get("/events");
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("event: model") {
            let n = events.read(&mut buf).unwrap();
            assert_ne!(n, 0, "{}", String::from_utf8_lossy(&seen));
            seen.extend_from_slice(&buf[..n]);
        }
        assert!(String::from_utf8_lossy(&seen).contains("text/event-stream"));
        let mut other = String::new();
        let mut s = TcpStream::connect(d.addr()).unwrap();
        write!(s, "GET / HTTP/1.1\r\nhost: rebound.example:{port}\r\n\r\n").unwrap();
        s.read_to_string(&mut other).unwrap();
        assert!(other.starts_with("HTTP/1.1 403"), "{other}");
    }
}
