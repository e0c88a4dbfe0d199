//! Responses: JSON bodies, errors in one shape (`{"error": {"code",
//! "message"}}`, plus `limit` for a quota), plain files, and the body of a
//! server-sent event stream.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc;

pub type Reply = Response<BoxBody<Bytes, Infallible>>;

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Reply {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

pub fn json(status: StatusCode, value: &impl Serialize) -> Reply {
    match serde_json::to_vec_pretty(value) {
        Ok(body) => full(status, "application/json", body),
        Err(e) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            &format!("{e}"),
        ),
    }
}

pub fn error(status: StatusCode, code: &str, message: &str) -> Reply {
    error_with(status, json!({"code": code, "message": message}))
}

pub fn error_with(status: StatusCode, error: Value) -> Reply {
    let mut r = json(status, &json!({ "error": error }));
    if status == StatusCode::UNAUTHORIZED
        && let Ok(v) = "Bearer realm=\"wload\"".parse()
    {
        r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    r
}

pub fn not_found(what: &str) -> Reply {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        &format!("no such {what}"),
    )
}

/// 405, with the methods the route has in `Allow`.
pub fn method_not_allowed(allowed: &[&str]) -> Reply {
    let list = allowed.join(", ");
    let mut r = error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        &format!("this route takes {list}"),
    );
    if let Ok(v) = list.parse() {
        r.headers_mut().insert(header::ALLOW, v);
    }
    r
}

pub fn bad_request(message: &str) -> Reply {
    error(StatusCode::BAD_REQUEST, "bad_request", message)
}

pub fn internal(e: &anyhow::Error) -> Reply {
    eprintln!("ERROR wload serve: {e:#}");
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        &format!("{e:#}"),
    )
}

/// A stored file of a run, or 404 naming it.
pub fn file(path: &std::path::Path, content_type: &str, what: &str) -> Reply {
    match std::fs::read(path) {
        Ok(bytes) => full(StatusCode::OK, content_type, bytes),
        Err(_) => not_found(what),
    }
}

/// A server-sent event stream fed by a channel of encoded events.
pub fn event_stream(events: mpsc::Receiver<Bytes>) -> Reply {
    let mut r = Response::new(ChannelBody(events).boxed());
    let headers = r.headers_mut();
    for (k, v) in [
        (header::CONTENT_TYPE, "text/event-stream"),
        (header::CACHE_CONTROL, "no-cache"),
    ] {
        if let Ok(v) = v.parse() {
            headers.insert(k, v);
        }
    }
    r
}

/// One event: `event: NAME`, its data split into `data:` lines.
pub fn sse(name: &str, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + name.len() + 16);
    out.push_str("event: ");
    out.push_str(name);
    out.push('\n');
    for line in data.lines() {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    if data.is_empty() {
        out.push_str("data:\n");
    }
    out.push('\n');
    Bytes::from(out)
}

struct ChannelBody(mpsc::Receiver<Bytes>);

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn events_split_their_data_into_lines() {
        assert_eq!(super::sse("a", "x\ny"), "event: a\ndata: x\ndata: y\n\n");
        assert_eq!(super::sse("end", ""), "event: end\ndata:\n\n");
    }
}
