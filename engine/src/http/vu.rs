//! What one VU keeps between requests: its idle keep-alive connections
//! by origin, its cookie jar and the URLs it parsed last. Shared (behind one uncontended lock) with
//! the tasks of a batch, so that a batch reuses and adds connections.

use std::collections::{HashMap, HashSet};
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
}

#[derive(Default)]
struct VuInner {
    idle: HashMap<String, Vec<Conn>>,
    /// Origins known to speak HTTP/1.1, where a batch opens connections in
    /// parallel instead of waiting to learn whether one can be shared.
    http1: HashSet<String>,
    /// One gate per origin, held while a batch task opens a connection
    /// that might turn out to be HTTP/2 and so serve the others.
    gates: HashMap<String, Arc<tokio::sync::Mutex<()>>>,
    /// The iteration these connections were last used in.
    iteration: u64,
    jar: CookieJar,
    /// The last [`TARGETS`] URLs parsed, replaced round-robin.
    targets: Vec<(Box<str>, Arc<Target>)>,
    next_target: usize,
}

impl VuConnections {
    fn lock(&self) -> MutexGuard<'_, VuInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An idle connection to `key`: an HTTP/1.1 one is taken out; an
    /// HTTP/2 one stays in the pool and a handle on it is returned.
    pub(super) fn take(&self, key: &str) -> Option<Conn> {
        let mut inner = self.lock();
        let conns = inner.idle.get_mut(key)?;
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
        if conn.proto() == Proto::Http1 && !inner.http1.contains(key) {
            inner.http1.insert(key.to_owned());
        }
        match inner.idle.get_mut(key) {
            Some(v) => {
                // One HTTP/2 connection per origin is enough.
                if conn.proto() == Proto::Http2
                    && v.iter().any(|c| c.proto() == Proto::Http2 && c.is_open())
                {
                    return;
                }
                v.push(conn)
            }
            None => {
                inner.idle.insert(key.to_owned(), vec![conn]);
            }
        }
    }

    /// The gate to hold while opening a connection to `key` from a batch,
    /// or `None` when the origin is known to be HTTP/1.1.
    pub(super) fn gate(&self, key: &str) -> Option<Arc<tokio::sync::Mutex<()>>> {
        let mut inner = self.lock();
        if inner.http1.contains(key) {
            return None;
        }
        Some(inner.gates.entry(key.to_owned()).or_default().clone())
    }

    /// Note the VU's current iteration; with `drop_idle`
    /// (`--no-vu-connection-reuse`), a new iteration starts without the
    /// previous one's connections.
    pub fn begin_iteration(&self, iteration: u64, drop_idle: bool) {
        let mut inner = self.lock();
        if inner.iteration != iteration {
            inner.iteration = iteration;
            if drop_idle {
                inner.idle.clear();
            }
        }
    }

    /// Run `f` on the VU's cookie jar.
    pub fn with_jar<T>(&self, f: impl FnOnce(&mut CookieJar) -> T) -> T {
        f(&mut self.lock().jar)
    }

    /// Open connections kept by this VU.
    pub fn len(&self) -> usize {
        self.lock().idle.values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
