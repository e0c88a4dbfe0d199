//! Where a request goes: a URL split into what the connection pool, the
//! TLS handshake and the request line need.

use http::Uri;

use super::error::{ErrorCode, HttpError};

pub struct Target {
    /// `scheme://host:port`, the key of the connection pool.
    pub key: String,
    pub host: String,
    pub port: u16,
    pub tls: bool,
    /// Value of the `host` header: host and port, never userinfo.
    pub host_header: String,
    /// `Basic ...` for the URL's userinfo (`http://user:pass@host/`), sent
    /// as `authorization` unless the test sets its own, as k6 does.
    pub basic_auth: Option<String>,
    /// Origin-form request target (`/path?query`), for HTTP/1.1.
    pub path: Uri,
    /// The absolute URL, for HTTP/2's `:scheme` and `:authority`.
    pub full: Uri,
}

pub fn parse_target(url: &str) -> Result<Target, HttpError> {
    let uri: Uri = url
        .parse()
        .map_err(|e| HttpError::new(ErrorCode::InvalidUrl, format!("invalid URL {url:?}: {e}")))?;
    let (tls, default_port) = match uri.scheme_str() {
        Some("http") => (false, 80),
        Some("https") => (true, 443),
        _ => {
            return Err(HttpError::new(
                ErrorCode::InvalidUrl,
                format!("invalid URL {url:?}: expected an absolute http:// or https:// URL"),
            ));
        }
    };
    let authority = uri
        .authority()
        .ok_or_else(|| HttpError::new(ErrorCode::InvalidUrl, format!("URL {url:?} has no host")))?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    if host.is_empty() {
        return Err(HttpError::new(
            ErrorCode::InvalidUrl,
            format!("URL {url:?} has no host"),
        ));
    }
    let port = authority.port_u16().unwrap_or(default_port);
    // `http::uri::Authority` keeps userinfo in its text: it must reach
    // neither `host` nor HTTP/2's `:authority`.
    let (host_header, basic_auth) = match authority.as_str().rsplit_once('@') {
        Some((userinfo, host_port)) => (host_port.to_owned(), Some(basic_auth(userinfo))),
        None => (authority.as_str().to_owned(), None),
    };
    let path = uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .parse::<Uri>()
        .map_err(|e| HttpError::new(ErrorCode::InvalidUrl, format!("invalid URL {url:?}: {e}")))?;
    let scheme = if tls { "https" } else { "http" };
    let full = if basic_auth.is_some() {
        format!("{scheme}://{host_header}{path}")
            .parse::<Uri>()
            .map_err(|e| {
                HttpError::new(ErrorCode::InvalidUrl, format!("invalid URL {url:?}: {e}"))
            })?
    } else {
        uri.clone()
    };
    Ok(Target {
        key: format!("{scheme}://{}:{port}", authority.host()),
        host: host.to_owned(),
        port,
        tls,
        host_header,
        basic_auth,
        path,
        full,
    })
}

/// The `authorization` value of a URL's `user:password` (percent-decoded,
/// as RFC 3986 writes them).
fn basic_auth(userinfo: &str) -> String {
    use base64::Engine as _;
    let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    let mut plain = decode(user);
    plain.push(b':');
    plain.extend(decode(password));
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(plain)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_bad_urls_get_codes() {
        let t = parse_target("http://127.0.0.1:8080/a/b?c=d").unwrap();
        assert_eq!(t.key, "http://127.0.0.1:8080");
        assert_eq!(t.path, "/a/b?c=d");
        assert_eq!(t.host_header, "127.0.0.1:8080");
        let t = parse_target("http://example.test").unwrap();
        assert_eq!((t.port, t.path.to_string().as_str()), (80, "/"));
        let t = parse_target("http://[::1]:81/").unwrap();
        assert_eq!(t.host, "::1");
        let t = parse_target("https://example.test/x").unwrap();
        assert_eq!((t.port, t.tls), (443, true));
        let t = parse_target("http://us%40er:p%3Ass@127.0.0.1:81/x").unwrap();
        assert_eq!(t.host_header, "127.0.0.1:81");
        assert_eq!(t.full.authority().map(|a| a.as_str()), Some("127.0.0.1:81"));
        // base64 of "us@er:p:ss".
        assert_eq!(t.basic_auth.as_deref(), Some("Basic dXNAZXI6cDpzcw=="));
        assert_eq!(parse_target("http://h/").unwrap().basic_auth, None);
        for bad in ["", "/relative", "ftp://x/", "http://"] {
            let e = parse_target(bad).err().unwrap();
            assert_eq!(e.code, ErrorCode::InvalidUrl, "{bad}: {e}");
        }
    }
}
