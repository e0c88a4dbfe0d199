//! URLs as the replay needs them: split into origin, path and query (to
//! move a recording to another origin), and turned into a template that
//! names the request, so that `/cart/1234` and `/cart/5678` are one
//! series, `/cart/{id}`, as a k6 user would name them with `name` tags.

use std::fmt;

/// An absolute `http`/`https` URL, in parts.
#[derive(Debug, Clone, PartialEq)]
pub struct Url {
    /// `http` or `https`.
    pub scheme: String,
    pub host: String,
    /// `:8080`, or empty.
    pub port: String,
    /// From the first `/` (at least `/`), without the query or fragment.
    pub path: String,
    /// After `?`, without the fragment; `None` when there is no `?`.
    pub query: Option<String>,
}

impl Url {
    pub fn parse(text: &str) -> Result<Url, String> {
        let (scheme, rest) = text
            .split_once("://")
            .ok_or("not an absolute URL (http:// or https://)")?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(format!("scheme {scheme:?} is not http or https"));
        }
        let rest = rest.split('#').next().unwrap_or_default();
        let (authority, path_query) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        // Credentials in a URL are not sent by browsers' recordings; they
        // would be lost from the origin here.
        let authority = authority.rsplit('@').next().unwrap_or_default();
        let (host, port) = match authority.rfind(':') {
            Some(i) if !authority.ends_with(']') => (&authority[..i], &authority[i..]),
            _ => (authority, ""),
        };
        if host.is_empty() {
            return Err("no host".to_owned());
        }
        let (path, query) = match path_query.split_once('?') {
            Some((p, q)) => (p, Some(q.to_owned())),
            None => (path_query, None),
        };
        Ok(Url {
            scheme,
            host: host.to_owned(),
            port: port.to_owned(),
            path: if path.is_empty() {
                "/".to_owned()
            } else {
                path.to_owned()
            },
            query,
        })
    }

    /// The same path and query at `origin` (`scheme://host[:port]`).
    pub fn with_origin(self, origin: &str) -> Url {
        match Url::parse(origin) {
            Ok(o) => Url {
                scheme: o.scheme,
                host: o.host,
                port: o.port,
                ..self
            },
            // `origin` was checked by `origin()`.
            Err(_) => self,
        }
    }

    /// The request's name: id-like path segments as `{id}`, query values
    /// as `{}` (keys kept, in order).
    pub fn template(&self) -> String {
        let path: Vec<&str> = self
            .path
            .split('/')
            .map(|s| if is_id(s) { "{id}" } else { s })
            .collect();
        let mut out = format!(
            "{}://{}{}{}",
            self.scheme,
            self.host,
            self.port,
            path.join("/")
        );
        if let Some(q) = &self.query {
            let keys: Vec<String> = q
                .split('&')
                .filter(|kv| !kv.is_empty())
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) => format!("{k}={{}}"),
                    None => kv.to_owned(),
                })
                .collect();
            if !keys.is_empty() {
                out.push('?');
                out.push_str(&keys.join("&"));
            }
        }
        out
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}{}{}",
            self.scheme, self.host, self.port, self.path
        )?;
        if let Some(q) = &self.query {
            write!(f, "?{q}")?;
        }
        Ok(())
    }
}

/// Whether a path segment is an id rather than a name: a number, a UUID,
/// a long hexadecimal string, or a long token mixing letters and digits.
fn is_id(segment: &str) -> bool {
    let s = segment;
    if s.is_empty() {
        return false;
    }
    let digits = s.bytes().filter(u8::is_ascii_digit).count();
    let all_digits = digits == s.len();
    let uuid = s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        });
    let hex = s.len() >= 16 && s.bytes().all(|b| b.is_ascii_hexdigit()) && digits > 0;
    let token = s.len() >= 20
        && digits > 0
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    all_digits || uuid || hex || token
}

/// `base-url`'s value: empty for none, else an origin.
pub fn origin(text: &str) -> Result<Option<String>, String> {
    let t = text.trim().trim_end_matches('/');
    if t.is_empty() {
        return Ok(None);
    }
    match Url::parse(t) {
        Ok(u) if u.path == "/" && u.query.is_none() => {
            Ok(Some(format!("{}://{}{}", u.scheme, u.host, u.port)))
        }
        Ok(_) => Err(format!(
            "{text:?} has a path or query; expected an origin such as http://127.0.0.1:8080"
        )),
        Err(why) => Err(format!(
            "{text:?}: {why}; expected an origin such as http://127.0.0.1:8080"
        )),
    }
}

/// `application/x-www-form-urlencoded` of HAR's `postData.params`.
pub fn form_encode<'a>(pairs: impl Iterator<Item = (&'a str, &'a str)>) -> String {
    fn enc(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                    out.push(b as char)
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    }
    pairs
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_become_placeholders_and_names_stay() {
        let t = |u: &str| Url::parse(u).expect("a URL").template();
        assert_eq!(t("http://a.b/users/42"), "http://a.b/users/{id}");
        assert_eq!(
            t("https://a.b:8443/o/123e4567-e89b-12d3-a456-426614174000/items/"),
            "https://a.b:8443/o/{id}/items/"
        );
        assert_eq!(
            t("http://a.b/blob/0123456789abcdef0"),
            "http://a.b/blob/{id}"
        );
        assert_eq!(
            t("http://a.b/static/app.js?v=3&debug"),
            "http://a.b/static/app.js?v={}&debug"
        );
        assert_eq!(
            t("http://a.b/v2/api/checkout"),
            "http://a.b/v2/api/checkout"
        );
        assert_eq!(t("http://a.b"), "http://a.b/");
    }

    #[test]
    fn urls_move_to_another_origin() {
        let u = Url::parse("https://shop.example.com/a?b=1#frag").expect("a URL");
        assert_eq!(u.to_string(), "https://shop.example.com/a?b=1");
        let moved = u.with_origin("http://127.0.0.1:9000");
        assert_eq!(moved.to_string(), "http://127.0.0.1:9000/a?b=1");
        assert_eq!(
            origin("http://127.0.0.1:9000/"),
            Ok(Some("http://127.0.0.1:9000".to_owned()))
        );
        assert_eq!(origin(""), Ok(None));
        assert!(origin("http://h/path").is_err());
        assert!(origin("ftp://h").is_err());
    }

    #[test]
    fn forms_are_encoded() {
        let pairs = [("q", "a b&c"), ("n", "1")];
        assert_eq!(form_encode(pairs.into_iter()), "q=a+b%26c&n=1");
    }
}
