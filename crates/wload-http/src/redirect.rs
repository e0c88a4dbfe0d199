//! Following redirects: which statuses redirect, where to, and what the
//! next request looks like (browsers' and Go's rules, as k6 follows them).

/// Whether `status` is a redirect that carries a `Location`.
pub fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// Whether the next hop keeps the method and body: 307 and 308 must;
/// 303 never does; 301/302 turn POST into GET as browsers do.
pub fn keeps_method(status: u16, method: &str) -> bool {
    match status {
        307 | 308 => true,
        303 => method == "HEAD",
        _ => method != "POST",
    }
}

/// The absolute URL `location` points to from `base`, by RFC 3986
/// (`?x` keeps the path, `../` climbs, `//host` keeps the scheme); `None`
/// when either cannot be parsed or it is not http(s).
pub fn resolve(base: &str, location: &str) -> Option<String> {
    let mut next = url::Url::parse(base).ok()?.join(location.trim()).ok()?;
    // A fragment is the client's own, never sent.
    next.set_fragment(None);
    matches!(next.scheme(), "http" | "https").then(|| next.into())
}

/// Header fields that carry credentials: a redirect to another host
/// drops them, as Go's client (which k6 uses) does, so that a server
/// cannot have a test's token sent to a host of its choosing.
const CREDENTIALS: [&str; 3] = ["authorization", "cookie", "proxy-authorization"];

/// Whether a redirect from `from` to `to` keeps the test's credential
/// headers: to the same host or a subdomain of it (Go's rule), and not
/// from https down to plain http.
pub fn keeps_credentials(from: &str, to: &str) -> bool {
    let (Ok(from), Ok(to)) = (url::Url::parse(from), url::Url::parse(to)) else {
        return false;
    };
    let (Some(a), Some(b)) = (from.host_str(), to.host_str()) else {
        return false;
    };
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    let same_or_sub = b == a || b.ends_with(&format!(".{a}"));
    let downgraded = from.scheme() == "https" && to.scheme() != "https";
    same_or_sub && !downgraded
}

/// Drop the credential headers of `headers`.
pub fn drop_credentials(headers: &mut Vec<(String, String)>) {
    headers.retain(|(k, _)| !CREDENTIALS.iter().any(|c| k.eq_ignore_ascii_case(c)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_and_methods_change() {
        let base = "http://h:1/a/b?q=1";
        assert_eq!(resolve(base, "/x").unwrap(), "http://h:1/x");
        assert_eq!(resolve(base, "c").unwrap(), "http://h:1/a/c");
        assert_eq!(resolve(base, "//o/p").unwrap(), "http://o/p");
        assert_eq!(resolve(base, "https://s/").unwrap(), "https://s/");
        // RFC 3986 section 5.4's examples, the ones redirects meet.
        let base = "http://a/b/c/d;p?q";
        for (loc, want) in [
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("?y", "http://a/b/c/d;p?y"),
            ("#s", "http://a/b/c/d;p?q"),
            ("../g", "http://a/b/g"),
            ("../../../g", "http://a/g"),
            ("//g", "http://g/"),
        ] {
            assert_eq!(resolve(base, loc).as_deref(), Some(want), "{loc}");
        }
        assert_eq!(resolve(base, "ftp://x/"), None);
        assert!(!keeps_method(302, "POST"));
        assert!(keeps_method(307, "POST"));
        assert!(!keeps_method(303, "PUT"));
        assert!(keeps_method(301, "GET"));
    }

    #[test]
    fn credentials_stay_on_their_host_and_its_subdomains() {
        assert!(keeps_credentials("http://h:1/a", "http://h:2/b"));
        assert!(keeps_credentials(
            "https://example.test/",
            "https://api.example.test/"
        ));
        assert!(!keeps_credentials(
            "http://example.test/",
            "http://evil.test/"
        ));
        assert!(!keeps_credentials(
            "http://example.test/",
            "http://notexample.test/"
        ));
        assert!(!keeps_credentials("https://h/", "http://h/"));
        let mut headers = vec![
            ("Authorization".to_owned(), "Bearer t".to_owned()),
            ("cookie".to_owned(), "a=1".to_owned()),
            ("Proxy-Authorization".to_owned(), "x".to_owned()),
            ("accept".to_owned(), "*/*".to_owned()),
        ];
        drop_credentials(&mut headers);
        assert_eq!(headers, vec![("accept".to_owned(), "*/*".to_owned())]);
    }
}
