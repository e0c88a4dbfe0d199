//! A VU's cookie jar: cookies set by responses (`Set-Cookie`) or by the
//! test, sent back on matching requests, kept across iterations as in k6.
//!
//! A small subset of RFC 6265 that load tests need: host-only and domain
//! cookies, path prefixes, `Secure`, `Max-Age`/`Expires`. No public-suffix
//! list: a test talks to the hosts it names.

use std::time::{Duration, SystemTime};

/// Seconds from the epoch to an expiry later than any run (the end of
/// year 9999), well inside what `SystemTime` holds on every platform.
const FOREVER_SECS: u64 = 253_402_300_799;

/// One stored cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCookie {
    pub name: String,
    pub value: String,
    /// Lower-case host or domain, without a leading dot.
    pub domain: String,
    /// True when set without `Domain`: sent to exactly that host.
    pub host_only: bool,
    pub path: String,
    pub secure: bool,
    pub expires: Option<SystemTime>,
}

#[derive(Debug, Default)]
pub struct CookieJar {
    cookies: Vec<StoredCookie>,
}

impl CookieJar {
    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }

    /// Whether `header` is a `Set-Cookie` value at all (`name=value` with
    /// optional attributes), for refusing a malformed one with a reason.
    pub fn parses(header: &str) -> bool {
        cookie::Cookie::parse(header).is_ok()
    }

    /// Store the cookie of one `Set-Cookie` value received from
    /// `host` for a request to `path`. Malformed or foreign-domain cookies
    /// are ignored, as browsers do.
    pub fn store_header(&mut self, host: &str, path: &str, header: &str) {
        let Ok(c) = cookie::Cookie::parse(header) else {
            return;
        };
        let host = host.to_ascii_lowercase();
        let (domain, host_only) = match c.domain() {
            Some(d) if !d.is_empty() => {
                let d = d.trim_start_matches('.').to_ascii_lowercase();
                if !domain_matches(&host, &d) {
                    return;
                }
                (d, false)
            }
            _ => (host, true),
        };
        let path = match c.path() {
            Some(p) if p.starts_with('/') => p.to_owned(),
            _ => default_path(path),
        };
        let now = SystemTime::now();
        let expires = match (c.max_age(), c.expires_datetime()) {
            (Some(age), _) => {
                let secs = age.whole_seconds();
                Some(if secs <= 0 {
                    SystemTime::UNIX_EPOCH
                } else {
                    // A server's number: past what the clock holds, the
                    // cookie simply never expires (`+` would panic).
                    now.checked_add(Duration::from_secs(secs as u64))
                        .unwrap_or(SystemTime::UNIX_EPOCH + Duration::from_secs(FOREVER_SECS))
                })
            }
            (None, Some(at)) => {
                let secs = at.unix_timestamp();
                Some(if secs <= 0 {
                    SystemTime::UNIX_EPOCH
                } else {
                    SystemTime::UNIX_EPOCH
                        .checked_add(Duration::from_secs(secs as u64))
                        .unwrap_or(SystemTime::UNIX_EPOCH + Duration::from_secs(FOREVER_SECS))
                })
            }
            (None, None) => None,
        };
        self.put(StoredCookie {
            name: c.name().to_owned(),
            value: c.value().to_owned(),
            domain,
            host_only,
            path,
            secure: c.secure().unwrap_or(false),
            expires,
        });
    }

    /// Add or replace (same name, domain and path) a cookie; an expired
    /// one deletes its namesake.
    pub fn put(&mut self, cookie: StoredCookie) {
        self.cookies.retain(|c| {
            !(c.name == cookie.name && c.domain == cookie.domain && c.path == cookie.path)
        });
        let expired = cookie.expires.is_some_and(|t| t <= SystemTime::now());
        if !expired {
            self.cookies.push(cookie);
        }
    }

    /// `(name, value)` of the cookies to send to `host` + `path`, longest
    /// path first as RFC 6265 asks.
    pub fn matching(&mut self, secure: bool, host: &str, path: &str) -> Vec<(String, String)> {
        let now = SystemTime::now();
        self.cookies.retain(|c| c.expires.is_none_or(|t| t > now));
        let host = host.to_ascii_lowercase();
        let mut found: Vec<&StoredCookie> = self
            .cookies
            .iter()
            .filter(|c| {
                let host_ok = if c.host_only {
                    c.domain == host
                } else {
                    domain_matches(&host, &c.domain)
                };
                host_ok && path_matches(path, &c.path) && (secure || !c.secure)
            })
            .collect();
        found.sort_by_key(|c| std::cmp::Reverse(c.path.len()));
        found
            .into_iter()
            .map(|c| (c.name.clone(), c.value.clone()))
            .collect()
    }

    /// The `Cookie` header value for a request, if any cookie matches.
    pub fn header_for(&mut self, secure: bool, host: &str, path: &str) -> Option<String> {
        if self.cookies.is_empty() {
            return None;
        }
        let pairs = self.matching(secure, host, path);
        if pairs.is_empty() {
            return None;
        }
        let mut out = String::new();
        for (i, (k, v)) in pairs.iter().enumerate() {
            if i > 0 {
                out.push_str("; ");
            }
            out.push_str(k);
            out.push('=');
            out.push_str(v);
        }
        Some(out)
    }

    pub fn clear(&mut self) {
        self.cookies.clear();
    }
}

fn domain_matches(host: &str, domain: &str) -> bool {
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.')
}

fn path_matches(request: &str, cookie: &str) -> bool {
    request == cookie
        || (request.starts_with(cookie)
            && (cookie.ends_with('/') || request.as_bytes().get(cookie.len()) == Some(&b'/')))
}

/// RFC 6265 5.1.4: the request path up to its last `/`.
fn default_path(path: &str) -> String {
    let path = path.split('?').next().unwrap_or("/");
    match path.rfind('/') {
        Some(0) | None => "/".to_owned(),
        Some(i) => path[..i].to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_match_host_path_and_expire() {
        let mut jar = CookieJar::default();
        jar.store_header("example.test", "/a/b", "sid=1; Path=/");
        jar.store_header("example.test", "/a/b", "deep=2");
        jar.store_header("example.test", "/", "sec=3; Secure");
        jar.store_header("example.test", "/", "dom=4; Domain=example.test");
        jar.store_header("example.test", "/", "evil=5; Domain=other.test");
        assert_eq!(
            jar.header_for(false, "example.test", "/a/c").as_deref(),
            Some("deep=2; sid=1; dom=4")
        );
        assert_eq!(
            jar.header_for(false, "www.example.test", "/").as_deref(),
            Some("dom=4")
        );
        assert!(
            jar.header_for(true, "example.test", "/")
                .unwrap()
                .contains("sec=3")
        );
        jar.store_header("example.test", "/", "sid=gone; Path=/; Max-Age=0");
        assert!(
            !jar.header_for(false, "example.test", "/")
                .unwrap()
                .contains("sid")
        );
        jar.clear();
        assert!(jar.is_empty());
    }

    /// A hostile `Max-Age` past what the clock holds is a cookie that
    /// never expires, not a panic of the whole run.
    #[test]
    fn huge_max_age_and_expires_do_not_panic() {
        let mut jar = CookieJar::default();
        jar.store_header("h", "/", "a=1; Max-Age=9223372036854775807");
        jar.store_header("h", "/", "b=2; Expires=Fri, 31 Dec 9999 23:59:59 GMT");
        let sent = jar.header_for(false, "h", "/").unwrap_or_default();
        assert!(sent.contains("a=1") && sent.contains("b=2"), "{sent}");
    }
}
