//! Name resolution with a run-wide cache whose TTL is an option (k6's
//! `dns.ttl`). Only new connections resolve, so the lock is off the path of
//! requests on kept-alive connections.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::error::{ErrorCode, HttpError};

/// Answers by `(host, port)`, with when they were looked up.
type Cache = HashMap<(String, u16), (Vec<SocketAddr>, Instant)>;

pub struct Resolver {
    ttl: Duration,
    cache: Mutex<Cache>,
}

impl Resolver {
    /// A resolver caching answers for `ttl` (zero: no cache).
    pub fn new(ttl: Duration) -> Resolver {
        Resolver {
            ttl,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The addresses of `host:port`; IP literals skip the resolver.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, HttpError> {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(vec![(ip, port).into()]);
        }
        let key = (host.to_owned(), port);
        if !self.ttl.is_zero()
            && let Some((addrs, at)) = lock(&self.cache).get(&key)
            && at.elapsed() < self.ttl
        {
            return Ok(addrs.clone());
        }
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|e| HttpError::new(ErrorCode::Dns, format!("lookup {host}: {e}")))?
            .collect();
        if addrs.is_empty() {
            return Err(HttpError::new(
                ErrorCode::NoIpFound,
                format!("lookup {host}: no IP address found"),
            ));
        }
        if !self.ttl.is_zero() {
            lock(&self.cache).insert(key, (addrs.clone(), Instant::now()));
        }
        Ok(addrs)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
