//! From a HAR document to the plan an iteration walks: the entries to
//! replay in the order they started, each with its request ready to send,
//! its name, its check and the think time before it.
//!
//! Only the fields replaying needs are read (HAR 1.2, which 1.1 files
//! also satisfy for these); anything else in the file is ignored, so
//! browsers' own extensions (`_initiator`, `_priority`, …) do no harm.

use std::time::Duration;

use serde::Deserialize;

use crate::{template, time};

/// What the plugin's parameters say about replaying.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub think: Think,
    /// `scheme://host[:port]` to send to instead of the recorded origin.
    pub base_url: Option<String>,
    /// Only entries to these hosts (lower case); empty: all.
    pub hosts: Vec<String>,
    pub check_status: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            think: Think::Recorded,
            base_url: None,
            hosts: Vec::new(),
            check_status: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    /// The recording's idle times.
    Recorded,
    /// None at all.
    None,
    /// This long before each page (or entry) after the first.
    Fixed(Duration),
}

/// One entry, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    /// The URL template (the request's `name` tag).
    pub name: String,
    /// The check's name: `GET NAME is 200`.
    pub check: String,
    /// The recorded status.
    pub status: u16,
    /// The group (the page's title) it belongs to, if any.
    pub group: Option<String>,
    /// How long to wait before sending it.
    pub think_before: Duration,
}

/// The whole replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub entries: Vec<Entry>,
    pub check_status: bool,
}

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    #[serde(default)]
    pages: Vec<Page>,
    entries: Vec<HarEntry>,
}

#[derive(Deserialize)]
struct Page {
    id: String,
    #[serde(default)]
    title: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarEntry {
    #[serde(default)]
    pageref: Option<String>,
    started_date_time: String,
    /// Milliseconds from the start to the end of the exchange; -1 or
    /// absent when unknown.
    #[serde(default)]
    time: f64,
    request: HarRequest,
    response: HarResponse,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarRequest {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(default)]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostData {
    #[serde(default)]
    mime_type: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    params: Vec<Header>,
}

#[derive(Deserialize)]
struct HarResponse {
    status: i64,
}

/// Headers not replayed: HTTP/2 pseudo-headers (a request line's parts),
/// what the engine's client sets itself, hop-by-hop ones, and recorded
/// cookies (the VU's jar sends the ones the replay's responses set).
fn replayed(name: &str) -> bool {
    !(name.starts_with(':')
        || [
            "host",
            "content-length",
            "connection",
            "keep-alive",
            "proxy-connection",
            "transfer-encoding",
            "upgrade",
            "te",
            "cookie",
        ]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h)))
}

impl Plan {
    /// Parse `text` (a HAR document) into a plan; `Err` says what is wrong
    /// with the recording.
    pub fn parse(text: &str, options: Options) -> Result<Plan, String> {
        let har: Har = serde_json::from_str(text).map_err(|e| {
            format!("not a HAR recording ({e}); expected {{\"log\": {{\"entries\": [...]}}}}")
        })?;
        let mut recorded = Vec::new();
        for (i, e) in har.log.entries.into_iter().enumerate() {
            let n = i + 1;
            let url = template::Url::parse(&e.request.url)
                .map_err(|why| format!("entry {n}: request.url {:?}: {why}", e.request.url))?;
            if !options.hosts.is_empty() && !options.hosts.contains(&url.host.to_ascii_lowercase())
            {
                continue;
            }
            // No response was recorded (blocked, cancelled): nothing to
            // compare a replay with.
            let Ok(status @ 100..=999) = u16::try_from(e.response.status) else {
                continue;
            };
            let started = time::parse_rfc3339_ms(&e.started_date_time).map_err(|why| {
                format!(
                    "entry {n}: startedDateTime {:?}: {why}",
                    e.started_date_time
                )
            })?;
            if e.request.method.is_empty()
                || !e
                    .request
                    .method
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            {
                return Err(format!(
                    "entry {n}: request.method {:?} is not a method",
                    e.request.method
                ));
            }
            recorded.push((started, e, url, status));
        }
        if recorded.is_empty() {
            return Err(if options.hosts.is_empty() {
                "the recording has no entry with a response to replay".to_owned()
            } else {
                format!(
                    "the recording has no entry with a response to replay on the hosts {}",
                    options.hosts.join(", ")
                )
            });
        }
        // In the order they started; entries that started together keep
        // their order in the file.
        recorded.sort_by(|a, b| a.0.total_cmp(&b.0));
        let titles: std::collections::HashMap<String, String> = har
            .log
            .pages
            .into_iter()
            .map(|p| {
                let title = if p.title.is_empty() {
                    p.id.clone()
                } else {
                    p.title
                };
                (p.id, title)
            })
            .collect();
        let has_pages = !titles.is_empty();
        let mut entries = Vec::with_capacity(recorded.len());
        // When every entry before the current one had ended (milliseconds
        // since the epoch).
        let mut ended: Option<f64> = None;
        let mut last_group: Option<Option<String>> = None;
        for (started, e, url, status) in recorded {
            let group = e.pageref.as_ref().and_then(|r| titles.get(r)).cloned();
            let first_of_page = last_group.as_ref() != Some(&group);
            let think_before = match options.think {
                Think::None => Duration::ZERO,
                Think::Recorded => ended
                    .map(|end| millis(started - end))
                    .unwrap_or(Duration::ZERO),
                Think::Fixed(d) => {
                    let boundary = if has_pages { first_of_page } else { true };
                    if boundary && last_group.is_some() {
                        d
                    } else {
                        Duration::ZERO
                    }
                }
            };
            let end = started + e.time.max(0.0);
            ended = Some(ended.map_or(end, |x: f64| x.max(end)));
            last_group = Some(group.clone());

            let url = match &options.base_url {
                Some(origin) => url.with_origin(origin),
                None => url,
            };
            let name = url.template();
            let method = e.request.method.to_ascii_uppercase();
            let mut headers: Vec<(String, String)> = e
                .request
                .headers
                .into_iter()
                .filter(|h| replayed(&h.name))
                .map(|h| (h.name, h.value))
                .collect();
            let body = e.request.post_data.map(|p| {
                if !p.mime_type.is_empty()
                    && !headers
                        .iter()
                        .any(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                {
                    headers.push(("content-type".to_owned(), p.mime_type.clone()));
                }
                match p.text {
                    Some(text) => text.into_bytes(),
                    None => template::form_encode(
                        p.params.iter().map(|h| (h.name.as_str(), h.value.as_str())),
                    )
                    .into_bytes(),
                }
            });
            entries.push(Entry {
                check: format!("{method} {name} is {status}"),
                method,
                url: url.to_string(),
                headers,
                body,
                name,
                status,
                group,
                think_before,
            });
        }
        Ok(Plan {
            entries,
            check_status: options.check_status,
        })
    }
}

/// Milliseconds of the recording as a wait: none when negative
/// (overlapping entries).
fn millis(ms: f64) -> Duration {
    if ms.is_finite() && ms > 0.0 {
        Duration::from_micros((ms * 1000.0) as u64)
    } else {
        Duration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn har() -> String {
        serde_json::json!({"log": {
            "version": "1.2",
            "pages": [{"id": "p1", "title": "Home"}, {"id": "p2", "title": ""}],
            "entries": [
                {"pageref": "p1", "startedDateTime": "2026-01-01T10:00:00.000Z", "time": 100,
                 "request": {"method": "GET", "url": "https://shop.example.com/",
                             "headers": [{"name": ":authority", "value": "shop.example.com"},
                                         {"name": "Accept", "value": "text/html"},
                                         {"name": "Cookie", "value": "old=1"}]},
                 "response": {"status": 200}},
                {"pageref": "p1", "startedDateTime": "2026-01-01T10:00:00.050Z", "time": 20,
                 "request": {"method": "get", "url": "https://cdn.example.net/app.js"},
                 "response": {"status": 200}},
                {"pageref": "p1", "startedDateTime": "2026-01-01T10:00:00.060Z", "time": 5,
                 "request": {"method": "GET", "url": "https://shop.example.com/blocked"},
                 "response": {"status": 0}},
                {"pageref": "p2", "startedDateTime": "2026-01-01T11:00:01.600+01:00", "time": 30,
                 "request": {"method": "POST", "url": "https://shop.example.com/cart/1234/items?sku=99&x=1",
                             "postData": {"mimeType": "application/json", "text": "{\"n\":1}"}},
                 "response": {"status": 201}}
            ]
        }})
        .to_string()
    }

    #[test]
    fn entries_are_replayed_in_order_with_recorded_idle_times() {
        let plan = Plan::parse(&har(), Options::default()).expect("a plan");
        let e = &plan.entries;
        assert_eq!(e.len(), 3, "the status-0 entry is skipped");
        assert_eq!(e[0].think_before, Duration::ZERO);
        // The CDN entry overlaps the first one.
        assert_eq!(e[1].think_before, Duration::ZERO);
        // 11:00:01.600+01:00 is 10:00:01.600Z; the first ended at .100.
        assert_eq!(e[2].think_before, Duration::from_millis(1500));
        assert_eq!(
            e[0].headers,
            vec![("Accept".to_owned(), "text/html".to_owned())]
        );
        assert_eq!(e[1].method, "GET");
        assert_eq!(
            e[2].name,
            "https://shop.example.com/cart/{id}/items?sku={}&x={}"
        );
        assert_eq!(
            e[2].check,
            "POST https://shop.example.com/cart/{id}/items?sku={}&x={} is 201"
        );
        assert_eq!(e[2].body.as_deref(), Some(&b"{\"n\":1}"[..]));
        assert!(
            e[2].headers
                .contains(&("content-type".to_owned(), "application/json".to_owned()))
        );
        assert_eq!(e[0].group.as_deref(), Some("Home"));
        assert_eq!(e[2].group.as_deref(), Some("p2"));
    }

    #[test]
    fn hosts_base_url_and_fixed_think_apply() {
        let options = Options {
            think: Think::Fixed(Duration::from_secs(2)),
            base_url: Some("http://127.0.0.1:8080".to_owned()),
            hosts: vec!["shop.example.com".to_owned()],
            check_status: true,
        };
        let plan = Plan::parse(&har(), options).expect("a plan");
        let urls: Vec<&str> = plan.entries.iter().map(|e| e.url.as_str()).collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:8080/",
                "http://127.0.0.1:8080/cart/1234/items?sku=99&x=1"
            ]
        );
        let thinks: Vec<Duration> = plan.entries.iter().map(|e| e.think_before).collect();
        assert_eq!(thinks, [Duration::ZERO, Duration::from_secs(2)]);
    }

    #[test]
    fn a_recording_that_cannot_be_replayed_says_why() {
        let err = Plan::parse("{\"log\": {}}", Options::default()).expect_err("no entries");
        assert!(err.starts_with("not a HAR recording"), "{err}");
        let only_blocked = serde_json::json!({"log": {"entries": [
            {"startedDateTime": "2026-01-01T10:00:00Z", "request": {"method": "GET", "url": "http://a/"},
             "response": {"status": 0}}]}});
        let err = Plan::parse(&only_blocked.to_string(), Options::default()).expect_err("nothing");
        assert!(err.contains("no entry with a response"), "{err}");
        let bad_url = serde_json::json!({"log": {"entries": [
            {"startedDateTime": "2026-01-01T10:00:00Z", "request": {"method": "GET", "url": "/relative"},
             "response": {"status": 200}}]}});
        let err = Plan::parse(&bad_url.to_string(), Options::default()).expect_err("bad url");
        assert!(
            err.starts_with("entry 1: request.url \"/relative\""),
            "{err}"
        );
    }
}
