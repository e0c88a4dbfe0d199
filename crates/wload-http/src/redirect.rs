//! Following redirects: which statuses redirect, where to, and what the
//! next request looks like (browsers' and Go's rules, as k6 follows them).

use http::Uri;

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

/// The absolute URL `location` points to from `base`.
pub fn resolve(base: &str, location: &str) -> Option<String> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return Some(location.to_owned());
    }
    let uri: Uri = base.parse().ok()?;
    let scheme = uri.scheme_str()?;
    let authority = uri.authority()?.as_str();
    if let Some(rest) = location.strip_prefix("//") {
        return Some(format!("{scheme}://{rest}"));
    }
    if location.starts_with('/') {
        return Some(format!("{scheme}://{authority}{location}"));
    }
    // Relative to the directory of the current path.
    let path = uri.path();
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    let dir = if dir.is_empty() { "/" } else { dir };
    Some(format!("{scheme}://{authority}{dir}{location}"))
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
        assert!(!keeps_method(302, "POST"));
        assert!(keeps_method(307, "POST"));
        assert!(!keeps_method(303, "PUT"));
        assert!(keeps_method(301, "GET"));
    }
}
