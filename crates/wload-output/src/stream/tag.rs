//! The tag field of an `--out hdr` interval: metric, unit and tag set in
//! one string without `,`, spaces or line breaks (the interval log's
//! separators): `METRIC;UNIT;KEY=VALUE;KEY=VALUE…`, keys sorted, where UNIT
//! is `ns` (a time trend: histogram values are nanoseconds, shown as ms)
//! or `milli` (a plain trend: values × 1000), and `%`, `,`, `;`, `=`,
//! spaces and control characters in keys and values are written `%XX`.

use wload_metrics::TagSet;

/// Encode a trend series as an interval tag.
pub fn encode(metric: &str, is_time: bool, tags: &TagSet) -> String {
    let mut out = String::with_capacity(64);
    out.push_str(metric);
    out.push(';');
    out.push_str(if is_time { "ns" } else { "milli" });
    for (k, v) in tags.iter() {
        out.push(';');
        escape(k, &mut out);
        out.push('=');
        escape(v, &mut out);
    }
    out
}

/// A decoded interval tag.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesTag {
    pub metric: String,
    pub is_time: bool,
    pub tags: TagSet,
}

/// Decode an interval tag written by [`encode`].
pub fn decode(tag: &str) -> Result<SeriesTag, String> {
    let mut parts = tag.split(';');
    let metric = parts.next().filter(|m| !m.is_empty());
    let unit = parts.next();
    let (Some(metric), Some(unit)) = (metric, unit) else {
        return Err(format!(
            "interval tag {tag:?} is not METRIC;UNIT;KEY=VALUE… (not written by wload --out hdr?)"
        ));
    };
    let is_time = match unit {
        "ns" => true,
        "milli" => false,
        other => return Err(format!("interval tag {tag:?}: unknown unit {other:?}")),
    };
    let mut pairs = Vec::new();
    for part in parts {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("interval tag {tag:?}: {part:?} is not KEY=VALUE"))?;
        pairs.push((unescape(k)?, unescape(v)?));
    }
    Ok(SeriesTag {
        metric: metric.to_owned(),
        is_time,
        tags: TagSet::new(pairs),
    })
}

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        if matches!(c, '%' | ',' | ';' | '=' | ' ') || c.is_control() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
}

fn unescape(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad %-escape in {s:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8 once unescaped"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_round_trip_through_the_separators() {
        let tags = TagSet::new([
            ("name", "http://h/a?x=1&y=2,3"),
            ("check", "body has 100% of; it"),
            ("group", "::a::b"),
            ("empty", ""),
            ("ünï", "cödé\ttab\nline"),
        ]);
        let enc = encode("http_req_duration", true, &tags);
        assert!(
            hdrhistogram::serialization::interval_log::Tag::new(&enc).is_some(),
            "{enc}"
        );
        let dec = decode(&enc).unwrap();
        assert_eq!(dec.metric, "http_req_duration");
        assert!(dec.is_time);
        assert_eq!(dec.tags, tags);
        let plain = decode(&encode("my_trend", false, &TagSet::empty())).unwrap();
        assert_eq!((plain.is_time, plain.tags), (false, TagSet::empty()));
        assert!(decode("http_req_duration").is_err());
        assert!(decode("m;parsecs").is_err());
        assert!(decode("m;ns;novalue").is_err());
        assert!(decode("m;ns;k=%zz").is_err());
    }
}
