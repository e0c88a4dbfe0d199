//! The HTTP side of the remote outputs (`--out prometheus-rw`, `--out
//! influxdb`): one thread per output sends the bodies that the
//! aggregation thread encoded, with wload's own HTTP client (its TLS
//! options, timeouts and body limits) on a single-threaded runtime.
//!
//! The aggregation thread only encodes and queues: a slow or down
//! endpoint never delays an interval nor the VUs. A push that fails is
//! reported once, the run goes on, and the end of the run says how many
//! pushes were lost. A full queue (an endpoint slower than the pushes)
//! drops the new push rather than growing without bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use wload_http::{BodyPool, Client, ClientConfig, RequestSpec, TlsOptions, VuConnections};

/// Pushes waiting to be sent; past this the newest is dropped.
const QUEUE: usize = 32;

/// Bytes of an error response kept for the message.
const ERROR_BODY: usize = 300;

/// Where and how one output pushes.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// What the messages call the output: `--out prometheus-rw (URL)`.
    pub label: String,
    /// Headers of every request (auth, the user's own).
    pub headers: Vec<(String, String)>,
    pub tls: TlsOptions,
    /// Per request: a hung endpoint costs one push, not the run's end.
    pub timeout: Duration,
}

/// One request body and where it goes.
pub struct Push {
    pub url: String,
    /// Headers of this body (content type and encoding).
    pub headers: Vec<(&'static str, String)>,
    pub body: Bytes,
}

#[derive(Default)]
struct Counts {
    sent: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
    /// Whether a failure was reported already (once per output).
    reported: AtomicBool,
    /// Set at the end of the run: a failure then gives up on the rest of
    /// the queue instead of waiting out each push's timeout.
    closing: AtomicBool,
}

/// The sending thread of one output.
pub struct Pusher {
    label: String,
    queue: Option<SyncSender<Push>>,
    thread: Option<JoinHandle<()>>,
    counts: Arc<Counts>,
}

impl Pusher {
    /// Build the client now, so that unusable TLS files fail before the
    /// run, and start the thread.
    pub fn start(endpoint: Endpoint) -> Result<Pusher> {
        let config = ClientConfig {
            timeout: endpoint.timeout,
            tls: endpoint.tls.clone(),
            max_redirects: 0,
            // Only error messages are read from the answers.
            max_body_size: 64 << 10,
            ..ClientConfig::default()
        };
        let client = Client::new(config, BodyPool::new(2))
            .with_context(|| format!("{}: cannot set up its HTTP client", endpoint.label))?;
        let (queue, pending) = mpsc::sync_channel::<Push>(QUEUE);
        let counts = Arc::new(Counts::default());
        let label = endpoint.label.clone();
        let thread = std::thread::Builder::new()
            .name("wload-push".into())
            .spawn({
                let counts = counts.clone();
                move || send_all(client, endpoint, pending, &counts)
            })
            .context("cannot start the thread of a remote output")?;
        Ok(Pusher {
            label,
            queue: Some(queue),
            thread: Some(thread),
            counts,
        })
    }

    /// Queue one push; never blocks.
    pub fn push(&self, push: Push) {
        let Some(queue) = &self.queue else { return };
        match queue.try_send(push) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                if self.counts.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                    eprintln!(
                        "WARN {}: the endpoint is slower than the pushes; pushes are \
                         dropped while {QUEUE} wait (a longer push interval sends fewer)",
                        self.label
                    );
                }
            }
            Err(TrySendError::Disconnected(_)) => {
                self.counts.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Send what is queued, stop the thread, and say what was lost.
    pub fn finish(&mut self) {
        self.counts.closing.store(true, Ordering::Relaxed);
        self.queue = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let c = &self.counts;
        let (sent, failed, dropped) = (
            c.sent.load(Ordering::Relaxed),
            c.failed.load(Ordering::Relaxed),
            c.dropped.load(Ordering::Relaxed),
        );
        if failed + dropped > 0 {
            eprintln!(
                "WARN {}: {} of {} pushes were not stored ({failed} failed, {dropped} dropped)",
                self.label,
                failed + dropped,
                sent + failed + dropped
            );
        }
    }
}

impl Drop for Pusher {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.finish();
        }
    }
}

fn send_all(client: Client, endpoint: Endpoint, pending: Receiver<Push>, counts: &Counts) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ERROR {}: cannot start its runtime: {e}", endpoint.label);
            counts
                .failed
                .fetch_add(pending.iter().count() as u64, Ordering::Relaxed);
            return;
        }
    };
    let conns = VuConnections::default();
    while let Ok(push) = pending.recv() {
        let mut headers = endpoint.headers.clone();
        headers.extend(push.headers.into_iter().map(|(k, v)| (k.to_owned(), v)));
        let spec = RequestSpec {
            method: "POST".into(),
            url: push.url,
            headers,
            body: Some(push.body),
            ..RequestSpec::default()
        };
        let response = runtime.block_on(client.send(&conns, spec));
        match refusal(&response) {
            None => {
                counts.sent.fetch_add(1, Ordering::Relaxed);
            }
            Some(why) => {
                counts.failed.fetch_add(1, Ordering::Relaxed);
                if !counts.reported.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "WARN {}: a push failed: {why}; the run goes on, and its end says \
                         how many pushes were lost",
                        endpoint.label
                    );
                }
                if counts.closing.load(Ordering::Relaxed) {
                    let rest = pending.try_iter().count() as u64;
                    counts.failed.fetch_add(rest, Ordering::Relaxed);
                    return;
                }
            }
        }
    }
}

/// Why the endpoint did not store a push, if it did not.
pub fn refusal(response: &wload_http::HttpResponse) -> Option<String> {
    if let Some(e) = &response.error {
        return Some(e.to_string());
    }
    if (200..300).contains(&response.status) {
        return None;
    }
    let body = String::from_utf8_lossy(response.body_bytes());
    let body: String = body.trim().chars().take(ERROR_BODY).collect();
    Some(if body.is_empty() {
        format!("HTTP {}", response.status)
    } else {
        format!("HTTP {}: {body}", response.status)
    })
}

/// `Authorization` of basic auth.
pub fn basic_auth(user: &str, password: &str) -> String {
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {token}")
}

/// A boolean environment value, as Go's `strconv.ParseBool` reads it (so
/// that k6's settings carry over).
pub fn parse_bool(name: &str, value: &str) -> Result<bool, String> {
    match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(format!(
            "{name}={value:?} is not a boolean: use true or false"
        )),
    }
}

/// `key:value,key:value` (k6's `K6_PROMETHEUS_RW_HTTP_HEADERS` form).
pub fn parse_pairs(name: &str, value: &str) -> Result<Vec<(String, String)>, String> {
    value
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|pair| match pair.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
            _ => Err(format!(
                "{name}: {pair:?} is not KEY:VALUE (e.g. {name}=key1:value1,key2:value2)"
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_as_k6_reads_them() {
        assert_eq!(parse_bool("X", "True"), Ok(true));
        assert_eq!(parse_bool("X", "0"), Ok(false));
        assert!(parse_bool("X", "yes").unwrap_err().contains("X=\"yes\""));
        assert_eq!(
            parse_pairs("H", "a:1, b : two:2,").unwrap(),
            vec![("a".into(), "1".into()), ("b".into(), "two:2".into())]
        );
        assert!(parse_pairs("H", "novalue").is_err());
        assert_eq!(basic_auth("u", "p"), "Basic dTpw");
    }
}
