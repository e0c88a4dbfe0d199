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
    /// Value of the `host` header.
    pub host_header: String,
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
    let path = uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .parse::<Uri>()
        .map_err(|e| HttpError::new(ErrorCode::InvalidUrl, format!("invalid URL {url:?}: {e}")))?;
    let scheme = if tls { "https" } else { "http" };
    Ok(Target {
        key: format!("{scheme}://{}:{port}", authority.host()),
        host: host.to_owned(),
        port,
        tls,
        host_header: authority.as_str().to_owned(),
        path,
        full: uri,
    })
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
        for bad in ["", "/relative", "ftp://x/", "http://"] {
            let e = parse_target(bad).err().unwrap();
            assert_eq!(e.code, ErrorCode::InvalidUrl, "{bad}: {e}");
        }
    }
}
