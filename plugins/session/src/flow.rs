//! The login/session flow itself, apart from how it is bound: the plugin
//! (`lib.rs`) exports it as `wload:session/login`, and the inline
//! baseline of the composition benchmark (`examples/rust/login_inline`)
//! compiles this same file into a test, so the two differ only in being
//! linked by wload at load time or by rustc at build time.
//!
//! The includer provides `http` and `checks`: the `wload:test`
//! interfaces of its own bindings.

use super::checks;
use super::http::{self, BodyMode, Request};

/// Log `user` in: `(user, token)` as the server issued them.
pub fn login(base_url: &str, user: &str, password: &str) -> Result<(String, String), String> {
    let body = format!("user={}&password={}", form(user), form(password));
    let res = http::send(&Request {
        method: "POST".into(),
        url: format!("{}/session/login", base_url.trim_end_matches('/')),
        headers: vec![(
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        )],
        body: Some(body.into_bytes()),
        tags: Vec::new(),
        name: Some("POST /session/login".into()),
        timeout: None,
        body_mode: BodyMode::Keep,
    });
    let status = res.status();
    checks::check("login is 200", status == 200, &[]);
    if status != 200 {
        return Err(match res.error() {
            Some(e) => format!("login as {user} failed: {e}"),
            None => format!("login as {user} answered {status}: {}", res.text()),
        });
    }
    let issued: serde_json::Value = serde_json::from_slice(&res.body())
        .map_err(|e| format!("login as {user} answered 200 with no JSON: {e}"))?;
    match (issued["user"].as_str(), issued["token"].as_str()) {
        (Some(user), Some(token)) => Ok((user.to_owned(), token.to_owned())),
        _ => Err(format!(
            "login as {user} answered 200 without {{\"user\": …, \"token\": …}}: {issued}"
        )),
    }
}

/// The header field that authenticates a request with `token`.
pub fn auth_header(token: &str) -> (String, String) {
    ("authorization".into(), format!("Bearer {token}"))
}

/// End the session of `user`.
pub fn logout(base_url: &str, user: &str, token: &str) -> Result<(), String> {
    let res = http::send(&Request {
        method: "POST".into(),
        url: format!("{}/session/logout", base_url.trim_end_matches('/')),
        headers: vec![auth_header(token)],
        body: None,
        tags: Vec::new(),
        name: Some("POST /session/logout".into()),
        timeout: None,
        body_mode: BodyMode::Discard,
    });
    let status = res.status();
    checks::check("logout is 204", status == 204, &[]);
    match (status, res.error()) {
        (204, _) => Ok(()),
        (_, Some(e)) => Err(format!("logout of {user} failed: {e}")),
        _ => Err(format!("logout of {user} answered {status}")),
    }
}

/// `s` percent-encoded for a form body: unreserved bytes as they are.
fn form(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
