//! A bearer-token login API on the target server, for the session
//! library plugin (`plugins/session`) and the tests composed with it: a
//! login that issues a token, a route that requires it, and a logout,
//! with counters of each so a test can prove the server saw the login
//! and the authenticated calls.
//!
//! - `POST /session/login` with a form body `user=NAME&password=PW`:
//!   `200 {"user": NAME, "token": TOKEN}` when `PW` is [`PASSWORD`],
//!   `401` otherwise; `NAME` is 1-64 of `A-Za-z0-9_-`
//! - `GET /session/me` with `authorization: Bearer TOKEN`: `200
//!   {"user": NAME}`, or `401` without a valid token
//! - `POST /session/logout` with the same header: `204`, or `401`
//!
//! Tokens are stateless (the user and a keyed hash of it), so a long run
//! that logs in every iteration does not grow the server's memory, and
//! every server instance accepts the tokens of every other.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use sha2::{Digest, Sha256};

/// The password every user logs in with.
pub const PASSWORD: &str = "wload";

/// What the session routes saw.
#[derive(Debug, Default)]
pub struct SessionStats {
    /// Logins answered 200.
    pub logins: AtomicU64,
    /// Logins refused (wrong password, bad user name or body).
    pub refused_logins: AtomicU64,
    /// `GET /session/me` answered 200: calls that carried a valid token.
    pub authorized: AtomicU64,
    /// Calls to `/session/me` or `/session/logout` without a valid token.
    pub unauthorized: AtomicU64,
    /// Logouts answered 204.
    pub logouts: AtomicU64,
}

impl SessionStats {
    pub fn logins(&self) -> u64 {
        self.logins.load(Ordering::Relaxed)
    }
    pub fn refused_logins(&self) -> u64 {
        self.refused_logins.load(Ordering::Relaxed)
    }
    pub fn authorized(&self) -> u64 {
        self.authorized.load(Ordering::Relaxed)
    }
    pub fn unauthorized(&self) -> u64 {
        self.unauthorized.load(Ordering::Relaxed)
    }
    pub fn logouts(&self) -> u64 {
        self.logouts.load(Ordering::Relaxed)
    }
}

/// The token of `user`: the name and a hash keyed by a constant, so the
/// server can check a token without remembering it.
pub fn token(user: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"wload-target session key\0");
    h.update(user.as_bytes());
    let mac: String = h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{user}.{mac}")
}

/// The user a token was issued to, if it is one of ours.
fn user_of(token: &str) -> Option<&str> {
    let (user, _) = token.split_once('.')?;
    (valid_user(user) && self::token(user) == token).then_some(user)
}

fn valid_user(user: &str) -> bool {
    (1..=64).contains(&user.len())
        && user
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Serve `/session/<rest>`.
pub async fn route(
    req: Request<Incoming>,
    rest: Option<&str>,
    stats: &SessionStats,
) -> Response<Full<Bytes>> {
    match (req.method().clone(), rest) {
        (Method::POST, Some("login")) => {
            let body = req
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            match login(&body) {
                Some(user) => {
                    stats.logins.fetch_add(1, Ordering::Relaxed);
                    json(
                        StatusCode::OK,
                        format!(r#"{{"user":"{user}","token":"{}"}}"#, token(&user)),
                    )
                }
                None => {
                    stats.refused_logins.fetch_add(1, Ordering::Relaxed);
                    json(
                        StatusCode::UNAUTHORIZED,
                        r#"{"error":"wrong user or password"}"#.to_owned(),
                    )
                }
            }
        }
        (Method::GET, Some("me")) => match bearer(&req) {
            Some(user) => {
                stats.authorized.fetch_add(1, Ordering::Relaxed);
                json(StatusCode::OK, format!(r#"{{"user":"{user}"}}"#))
            }
            None => unauthorized(stats),
        },
        (Method::POST, Some("logout")) => match bearer(&req) {
            Some(_) => {
                stats.logouts.fetch_add(1, Ordering::Relaxed);
                let mut r = Response::new(Full::new(Bytes::new()));
                *r.status_mut() = StatusCode::NO_CONTENT;
                r
            }
            None => unauthorized(stats),
        },
        _ => json(
            StatusCode::NOT_FOUND,
            r#"{"error":"use POST /session/login, GET /session/me, POST /session/logout"}"#
                .to_owned(),
        ),
    }
}

/// The user of a form body `user=NAME&password=PW` with the right password.
fn login(body: &[u8]) -> Option<String> {
    let body = std::str::from_utf8(body).ok()?;
    let (mut user, mut password) = (None, None);
    for pair in body.split('&') {
        match pair.split_once('=') {
            Some(("user", v)) => user = Some(v),
            Some(("password", v)) => password = Some(v),
            _ => {}
        }
    }
    let user = user.filter(|u| valid_user(u))?;
    (password? == PASSWORD).then(|| user.to_owned())
}

/// The user of the request's `authorization: Bearer TOKEN`.
fn bearer(req: &Request<Incoming>) -> Option<String> {
    let value = req.headers().get("authorization")?.to_str().ok()?;
    let token = value.strip_prefix("Bearer ")?;
    user_of(token.trim()).map(str::to_owned)
}

fn unauthorized(stats: &SessionStats) -> Response<Full<Bytes>> {
    stats.unauthorized.fetch_add(1, Ordering::Relaxed);
    let mut r = json(
        StatusCode::UNAUTHORIZED,
        r#"{"error":"log in first: POST /session/login"}"#.to_owned(),
    );
    r.headers_mut()
        .insert("www-authenticate", http::HeaderValue::from_static("Bearer"));
    r
}

fn json(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
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

    #[test]
    fn tokens_name_their_user_and_forgeries_are_refused() {
        let t = token("alice");
        assert_eq!(user_of(&t), Some("alice"));
        let forged = t.replacen("alice", "bob", 1);
        assert_eq!(user_of(&forged), None);
        assert_eq!(user_of("alice"), None);
        assert_eq!(user_of(""), None);
    }

    #[test]
    fn logins_need_the_password_and_a_plain_user_name() {
        assert_eq!(
            login(b"user=alice&password=wload").as_deref(),
            Some("alice")
        );
        assert_eq!(login(b"password=wload&user=vu-7").as_deref(), Some("vu-7"));
        assert_eq!(login(b"user=alice&password=nope"), None);
        assert_eq!(login(b"user=a%22b&password=wload"), None);
        assert_eq!(login(b"user=&password=wload"), None);
        assert_eq!(login(b"password=wload"), None);
    }
}
