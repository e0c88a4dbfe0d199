//! `/items/…`: a JSON resource with the REST verbs, so that a create →
//! read → update → delete cycle (the rest-crud plugin, a user's own CRUD
//! test) has something real to talk to, and a test can see what it did.
//!
//! - `POST /items`: store the JSON object of the body under a new numeric
//!   `id` (added to it); `201` with the stored object and `location`
//! - `GET /items`: every stored object, a JSON array in id order
//! - `GET /items/ID`: the object, or `404`
//! - `PUT /items/ID`: replace it with the body's object (its `id` kept);
//!   `200` with the stored object, `404` if there is none
//! - `DELETE /items/ID`: `204`, or `404`
//!
//! A body that is not a JSON object is `400`, another method `405`.
//! Objects live in memory, per server, at most [`MAX_ITEMS`] at once.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::Full;
use serde_json::{Map, Value};

/// Objects kept at once: a load test creating without deleting fills the
/// store, then gets `507` instead of the server's memory growing.
pub const MAX_ITEMS: usize = 100_000;

/// The stored objects and how many of each operation succeeded.
#[derive(Debug, Default)]
pub struct Items {
    store: Mutex<BTreeMap<u64, Map<String, Value>>>,
    next_id: AtomicU64,
    pub created: AtomicU64,
    pub read: AtomicU64,
    pub updated: AtomicU64,
    pub deleted: AtomicU64,
}

impl Items {
    /// Objects stored now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `(created, read, updated, deleted)` so far.
    pub fn counts(&self) -> (u64, u64, u64, u64) {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        (
            n(&self.created),
            n(&self.read),
            n(&self.updated),
            n(&self.deleted),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Map<String, Value>>> {
        // A panic elsewhere with the lock held leaves the map usable.
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Answer `method` on `/items` (`id` None) or `/items/ID`.
    pub fn route(&self, method: &Method, id: Option<&str>, body: &[u8]) -> Response<Full<Bytes>> {
        let id = match id.map(str::parse::<u64>) {
            None => None,
            Some(Ok(id)) => Some(id),
            Some(Err(_)) => return json(StatusCode::NOT_FOUND, &error("no such item")),
        };
        match (method, id) {
            (&Method::POST, None) => {
                let Some(mut object) = object(body) else {
                    return json(
                        StatusCode::BAD_REQUEST,
                        &error("the body must be a JSON object"),
                    );
                };
                let mut store = self.lock();
                if store.len() >= MAX_ITEMS {
                    return json(
                        StatusCode::INSUFFICIENT_STORAGE,
                        &error("the store is full"),
                    );
                }
                let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
                object.insert("id".into(), id.into());
                store.insert(id, object.clone());
                drop(store);
                self.created.fetch_add(1, Ordering::Relaxed);
                let mut r = json(StatusCode::CREATED, &Value::Object(object));
                if let Ok(v) = http::HeaderValue::from_str(&format!("/items/{id}")) {
                    r.headers_mut().insert("location", v);
                }
                r
            }
            (&Method::GET, None) => {
                let all: Vec<Value> = self.lock().values().cloned().map(Value::Object).collect();
                json(StatusCode::OK, &Value::Array(all))
            }
            (&Method::GET, Some(id)) => match self.lock().get(&id).cloned() {
                Some(object) => {
                    self.read.fetch_add(1, Ordering::Relaxed);
                    json(StatusCode::OK, &Value::Object(object))
                }
                None => json(StatusCode::NOT_FOUND, &error("no such item")),
            },
            (&Method::PUT, Some(id)) => {
                let Some(mut object) = object(body) else {
                    return json(
                        StatusCode::BAD_REQUEST,
                        &error("the body must be a JSON object"),
                    );
                };
                object.insert("id".into(), id.into());
                let mut store = self.lock();
                match store.get_mut(&id) {
                    Some(stored) => {
                        *stored = object.clone();
                        drop(store);
                        self.updated.fetch_add(1, Ordering::Relaxed);
                        json(StatusCode::OK, &Value::Object(object))
                    }
                    None => json(StatusCode::NOT_FOUND, &error("no such item")),
                }
            }
            (&Method::DELETE, Some(id)) => match self.lock().remove(&id) {
                Some(_) => {
                    self.deleted.fetch_add(1, Ordering::Relaxed);
                    let mut r = Response::new(Full::new(Bytes::new()));
                    *r.status_mut() = StatusCode::NO_CONTENT;
                    r
                }
                None => json(StatusCode::NOT_FOUND, &error("no such item")),
            },
            _ => json(
                StatusCode::METHOD_NOT_ALLOWED,
                &error("use POST or GET on /items, GET, PUT or DELETE on /items/ID"),
            ),
        }
    }
}

fn object(body: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice(body) {
        Ok(Value::Object(o)) => Some(o),
        _ => None,
    }
}

fn error(message: &str) -> Value {
    serde_json::json!({ "error": message })
}

fn json(status: StatusCode, value: &Value) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(value.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        "content-type",
        http::HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(r: &Response<Full<Bytes>>) -> Value {
        use http_body_util::BodyExt as _;
        let bytes = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(r.body().clone().collect())
            .expect("a full body never fails")
            .to_bytes();
        serde_json::from_slice(&bytes).expect("a JSON body")
    }

    #[test]
    fn a_crud_cycle_and_its_refusals() {
        let items = Items::default();
        let r = items.route(&Method::POST, None, br#"{"name": "a"}"#);
        assert_eq!(r.status(), StatusCode::CREATED);
        assert_eq!(r.headers()["location"], "/items/1");
        assert_eq!(body(&r), serde_json::json!({"name": "a", "id": 1}));
        let r = items.route(&Method::PUT, Some("1"), br#"{"name": "b", "id": 9}"#);
        assert_eq!(body(&r), serde_json::json!({"name": "b", "id": 1}));
        let r = items.route(&Method::GET, Some("1"), b"");
        assert_eq!(body(&r)["name"], "b");
        assert_eq!(
            items.route(&Method::DELETE, Some("1"), b"").status(),
            StatusCode::NO_CONTENT
        );
        assert_eq!(
            items.route(&Method::GET, Some("1"), b"").status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            items.route(&Method::DELETE, Some("1"), b"").status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            items.route(&Method::GET, Some("x"), b"").status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            items.route(&Method::POST, None, b"[1]").status(),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            items.route(&Method::PATCH, Some("1"), b"{}").status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
        assert_eq!(items.counts(), (1, 1, 1, 1));
        assert!(items.is_empty());
    }
}
