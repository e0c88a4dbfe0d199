//! A response's header fields, as the client and the guest read them.
//!
//! Building a header map for every HTTP/1.1 response (a name lookup, a
//! shared value and a hash insert per field, two allocations per map) was
//! the largest piece of the request path that nobody used: a load test
//! rarely reads a response header. So HTTP/1.1 responses keep their head
//! as it arrived (one copy), and fields are found by parsing it again
//! when asked. The fields the client itself asks about on every response
//! (`content-encoding`, `set-cookie`, `location`) are noted while the head
//! is first parsed, so that asking for them when absent costs nothing.
//! HTTP/2 responses come from hyper with a map, kept as it is.

use bytes::Bytes;
use http::HeaderMap;

/// Fields noted at the first parse, by bit.
const NOTED: [&str; 3] = ["content-encoding", "set-cookie", "location"];

/// Header fields parsed without a heap array.
const FEW_FIELDS: usize = 24;
/// Most fields a head may have (hyper's default; the client refuses more).
pub(super) const MAX_FIELDS: usize = 100;

/// Parse the response head at the start of `buf` and hand the parse to
/// `f`. Most heads fit the small field array; it lives on the stack of
/// whoever polls (a VU's fiber, whose touched pages stay resident), so
/// the full-size one is on the heap, for the rare rest. `TooManyHeaders`
/// means more than [`MAX_FIELDS`].
pub(super) fn parse_response<'b, R>(
    buf: &'b [u8],
    f: impl FnOnce(&httparse::Response<'_, 'b>, httparse::Status<usize>) -> R,
) -> Result<R, httparse::Error> {
    let mut few = [httparse::EMPTY_HEADER; FEW_FIELDS];
    let mut parsed = httparse::Response::new(&mut few);
    match parsed.parse(buf) {
        Err(httparse::Error::TooManyHeaders) => {
            let mut all = vec![httparse::EMPTY_HEADER; MAX_FIELDS];
            let mut parsed = httparse::Response::new(&mut all);
            let status = parsed.parse(buf)?;
            Ok(f(&parsed, status))
        }
        status => Ok(f(&parsed, status?)),
    }
}

#[derive(Debug, Default, Clone)]
pub struct Headers(Repr);

#[derive(Debug, Default, Clone)]
enum Repr {
    #[default]
    None,
    /// An HTTP/1.1 response head, validated by a complete parse, and the
    /// [`NOTED`] fields it has.
    Head {
        head: Bytes,
        noted: u8,
    },
    Map(HeaderMap),
}

impl Headers {
    /// The fields of `head`, a whole response head that parsed without
    /// error, with `noted` from [`Headers::note`] over its field names.
    pub(super) fn from_head(head: Bytes, noted: u8) -> Headers {
        Headers(Repr::Head { head, noted })
    }

    pub fn from_map(map: HeaderMap) -> Headers {
        Headers(Repr::Map(map))
    }

    /// The bit of a field name, when it is one that is noted.
    pub(super) fn note(name: &str) -> u8 {
        NOTED
            .iter()
            .position(|n| n.len() == name.len() && n.eq_ignore_ascii_case(name))
            .map_or(0, |i| 1 << i)
    }

    pub fn clear(&mut self) {
        self.0 = Repr::None;
    }

    /// Call `f` with each field's name and value, in the order received
    /// (names as sent: HTTP/1.1 names keep their case), until it returns
    /// `false`.
    fn visit<'a>(&'a self, mut f: impl FnMut(&'a str, &'a [u8]) -> bool) {
        match &self.0 {
            Repr::None => {}
            Repr::Map(map) => {
                for (name, value) in map {
                    if !f(name.as_str(), value.as_bytes()) {
                        return;
                    }
                }
            }
            Repr::Head { head, .. } => {
                // Parsed whole once already: it cannot fail now.
                let _ = parse_response(head, |parsed, _| {
                    for field in parsed.headers.iter() {
                        if !f(field.name, field.value) {
                            return;
                        }
                    }
                });
            }
        }
    }

    /// Whether a head lacks `name` without looking: it is noted, and was
    /// not there.
    fn surely_absent(&self, name: &str) -> bool {
        match &self.0 {
            Repr::None => true,
            Repr::Head { noted, .. } => {
                let bit = Headers::note(name);
                bit != 0 && noted & bit == 0
            }
            Repr::Map(_) => false,
        }
    }

    /// The first value of `name` (case-insensitive).
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        if self.surely_absent(name) {
            return None;
        }
        if let Repr::Map(map) = &self.0 {
            return map.get(name).map(|v| v.as_bytes());
        }
        let mut found = None;
        self.visit(|n, v| {
            if n.eq_ignore_ascii_case(name) {
                found = Some(v);
            }
            found.is_none()
        });
        found
    }

    /// Every value of `name` (case-insensitive), in order.
    pub fn get_all(&self, name: &str) -> Vec<&[u8]> {
        let mut out = Vec::new();
        if !self.surely_absent(name) {
            self.visit(|n, v| {
                if n.eq_ignore_ascii_case(name) {
                    out.push(v);
                }
                true
            });
        }
        out
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// All fields as the guest sees them: lower-case names, values as
    /// text (invalid UTF-8 replaced), in the order received.
    pub fn to_list(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        self.visit(|n, v| {
            out.push((
                n.to_ascii_lowercase(),
                String::from_utf8_lossy(v).into_owned(),
            ));
            true
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(fields: &str) -> Headers {
        let raw = format!("HTTP/1.1 200 OK\r\n{fields}\r\n");
        let mut noted = 0;
        let mut few = [httparse::EMPTY_HEADER; MAX_FIELDS];
        let mut parsed = httparse::Response::new(&mut few);
        assert!(parsed.parse(raw.as_bytes()).expect("valid").is_complete());
        for f in parsed.headers.iter() {
            noted |= Headers::note(f.name);
        }
        Headers::from_head(Bytes::from(raw), noted)
    }

    #[test]
    fn fields_are_found_by_any_case_in_order() {
        let h = head("Content-Type: text/plain\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\n");
        assert_eq!(h.get("content-type"), Some(&b"text/plain"[..]));
        assert_eq!(h.get("CONTENT-TYPE"), Some(&b"text/plain"[..]));
        assert_eq!(h.get_all("set-cookie"), vec![&b"a=1"[..], &b"b=2"[..]]);
        assert!(h.contains("Set-Cookie") && !h.contains("location"));
        assert_eq!(h.get("x-missing"), None);
        assert_eq!(
            h.to_list(),
            [
                ("content-type", "text/plain"),
                ("set-cookie", "a=1"),
                ("set-cookie", "b=2")
            ]
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
    }

    #[test]
    fn noted_fields_absent_from_the_head_are_not_searched_for() {
        let h = head("Location: /next\r\n");
        assert!(h.surely_absent("content-encoding") && h.surely_absent("Set-Cookie"));
        assert!(!h.surely_absent("location") && !h.surely_absent("x-other"));
        assert_eq!(h.get("location"), Some(&b"/next"[..]));
    }

    #[test]
    fn heads_with_many_fields_and_maps_answer_alike() {
        let many: String = (0..60).map(|i| format!("X-{i}: {i}\r\n")).collect();
        let h = head(&many);
        assert_eq!(h.get("x-59"), Some(&b"59"[..]));
        assert_eq!(h.to_list().len(), 60);
        let mut map = HeaderMap::new();
        map.append("x-a", "1".parse().expect("value"));
        map.append("x-a", "2".parse().expect("value"));
        let m = Headers::from_map(map);
        assert_eq!(m.get("X-A"), Some(&b"1"[..]));
        assert_eq!(m.get_all("x-a").len(), 2);
        let mut cleared = m.clone();
        cleared.clear();
        assert!(cleared.to_list().is_empty() && !cleared.contains("x-a"));
    }
}
