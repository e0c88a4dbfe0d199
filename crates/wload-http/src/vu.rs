//! What one VU keeps between requests: its idle keep-alive connections
//! by origin, its cookie jar and the URLs it parsed last. Shared (behind one uncontended lock) with
//! the tasks of a batch, so that a batch reuses and adds connections.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use super::conn::{Conn, Proto};
use super::cookies::CookieJar;
use super::error::HttpError;
use super::target::{Target, parse_target};

/// Parsed URLs a VU keeps: a VU usually requests the same few URLs over
/// and over, and parsing one costs two `Uri`s and three strings.
const TARGETS: usize = 4;

#[derive(Default, Clone)]
pub struct VuConnections {
    inner: Arc<Mutex<VuInner>>,
    /// The address this VU connects from (`--local-ips`), when one is set.
    source: Option<IpAddr>,
}

/// What a VU keeps per origin (`scheme://host:port`).
struct Origin {
    key: Box<str>,
    idle: Vec<Conn>,
    /// Known to speak HTTP/1.1: a batch opens connections to it in
    /// parallel instead of waiting to learn whether one can be shared.
    http1: bool,
    /// Held while a batch task opens a connection that might turn out to
    /// be HTTP/2 and so serve the others.
    gate: Option<Arc<tokio::sync::Mutex<()>>>,
}

#[derive(Default)]
struct VuInner {
    /// A list, not a map: a VU talks to one or a few origins, and a scan
    /// of those (the last one used first) is cheaper than hashing the key
    /// twice per request.
    origins: Vec<Origin>,
    /// The iteration these connections were last used in.
    iteration: u64,
    jar: CookieJar,
    /// The last [`TARGETS`] URLs parsed, replaced round-robin.
    targets: Vec<(Box<str>, Arc<Target>)>,
    next_target: usize,
}

impl VuInner {
    /// The entry of `key`, moved to the front of the list.
    fn origin(&mut self, key: &str) -> Option<&mut Origin> {
        let i = self.origins.iter().position(|o| &*o.key == key)?;
        self.origins.swap(0, i);
        self.origins.first_mut()
    }

    fn origin_or_new(&mut self, key: &str) -> &mut Origin {
        if self.origin(key).is_none() {
            self.origins.push(Origin {
                key: key.into(),
                idle: Vec::new(),
                http1: false,
                gate: None,
            });
            let last = self.origins.len() - 1;
            self.origins.swap(0, last);
        }
        &mut self.origins[0]
    }
}

impl VuConnections {
    /// A VU's connections, made from `source` when given.
    pub fn from_source(source: Option<IpAddr>) -> VuConnections {
        VuConnections {
            source,
            ..VuConnections::default()
        }
    }

    pub(super) fn source(&self) -> Option<IpAddr> {
        self.source
    }

    fn lock(&self) -> MutexGuard<'_, VuInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle connection to `key`: an HTTP/1.1 one is taken out; an
    /// HTTP/2 one stays in the pool and a handle on it is returned.
    pub(super) fn take(&self, key: &str) -> Option<Conn> {
        let mut inner = self.lock();
        let conns = &mut inner.origin(key)?.idle;
        while let Some(conn) = conns.last_mut() {
            if !conn.check_idle() {
                conns.pop();
                continue;
            }
            return match conn.share() {
                Some(shared) => Some(shared),
                None => conns.pop(),
            };
        }
        None
    }

    /// `url` parsed, from the VU's recent URLs when it is one of them.
    pub(super) fn target(&self, url: &str) -> Result<Arc<Target>, HttpError> {
        if let Some((_, t)) = self.lock().targets.iter().find(|(u, _)| &**u == url) {
            return Ok(t.clone());
        }
        let target = Arc::new(parse_target(url)?);
        let mut inner = self.lock();
        let entry = (Box::<str>::from(url), target.clone());
        if inner.targets.len() < TARGETS {
            inner.targets.push(entry);
        } else {
            let i = inner.next_target % TARGETS;
            inner.targets[i] = entry;
            inner.next_target = i + 1;
        }
        Ok(target)
    }

    /// Keep `conn` for the next request to `key`.
    pub(super) fn put(&self, key: &str, conn: Conn) {
        if !conn.is_open() {
            return;
        }
        let mut inner = self.lock();
        let origin = inner.origin_or_new(key);
        match conn.proto() {
            Proto::Http1 => origin.http1 = true,
            // One HTTP/2 connection per origin is enough.
            Proto::Http2 => {
                if origin
                    .idle
                    .iter()
                    .any(|c| c.proto() == Proto::Http2 && c.is_open())
                {
                    return;
                }
            }
        }
        origin.idle.push(conn);
    }

    /// The gate to hold while opening a connection to `key` from a batch,
    /// or `None` when the origin is known to be HTTP/1.1.
    pub(super) fn gate(&self, key: &str) -> Option<Arc<tokio::sync::Mutex<()>>> {
        let mut inner = self.lock();
        let origin = inner.origin_or_new(key);
        if origin.http1 {
            return None;
        }
        Some(origin.gate.get_or_insert_with(Default::default).clone())
    }

    /// Note the VU's current iteration; with `drop_idle`
    /// (`--no-vu-connection-reuse`), a new iteration starts without the
    /// previous one's connections.
    pub fn begin_iteration(&self, iteration: u64, drop_idle: bool) {
        let mut inner = self.lock();
        if inner.iteration != iteration {
            inner.iteration = iteration;
            if drop_idle {
                for origin in &mut inner.origins {
                    origin.idle.clear();
                }
            }
        }
    }

    /// Run `f` on the VU's cookie jar.
    pub fn with_jar<T>(&self, f: impl FnOnce(&mut CookieJar) -> T) -> T {
        f(&mut self.lock().jar)
    }

    /// Open connections kept by this VU.
    pub fn len(&self) -> usize {
        self.lock().origins.iter().map(|o| o.idle.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::Sender;
    use crate::h1::H1Conn;
    use crate::socket::{IoMarks, MeteredIo, Stream};

    async fn plain_conn(listener: &tokio::net::TcpListener) -> Conn {
        let addr = listener.local_addr().expect("address");
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let marks = Arc::new(IoMarks::default());
        Conn {
            sender: Sender::H1(H1Conn::new(Stream::Plain(MeteredIo::new(
                stream,
                marks.clone(),
            )))),
            marks,
            reused: true,
            tls_version: None,
        }
    }

    #[tokio::test]
    async fn idle_connections_are_kept_per_origin() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let conns = VuConnections::default();
        // Before any connection, a batch must wait at the gate.
        assert!(conns.gate("http://a:1").is_some());
        conns.put("http://a:1", plain_conn(&listener).await);
        conns.put("http://b:1", plain_conn(&listener).await);
        conns.put("http://a:1", plain_conn(&listener).await);
        assert_eq!(conns.len(), 3);
        assert!(conns.take("http://a:1").is_some());
        assert!(conns.take("http://b:1").is_some());
        assert!(conns.take("http://b:1").is_none());
        assert!(conns.take("http://c:1").is_none());
        assert!(conns.take("http://a:1").is_some());
        assert!(conns.is_empty());
        // Known HTTP/1.1 now: no gate.
        assert!(conns.gate("http://a:1").is_none());
        conns.put("http://a:1", plain_conn(&listener).await);
        conns.begin_iteration(1, true);
        assert!(conns.is_empty());
    }

    #[test]
    fn recent_urls_are_parsed_once_and_kept_bounded() {
        let conns = VuConnections::default();
        let a = conns.target("http://h:81/a").expect("valid URL");
        assert!(Arc::ptr_eq(
            &a,
            &conns.target("http://h:81/a").expect("valid URL")
        ));
        assert_eq!((a.key.as_str(), a.port), ("http://h:81", 81));
        for i in 0..TARGETS * 3 {
            conns.target(&format!("http://h/{i}")).expect("valid URL");
        }
        assert_eq!(conns.lock().targets.len(), TARGETS);
        assert!(conns.target("not a url").is_err());
    }
}
