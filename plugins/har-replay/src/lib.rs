//! har-replay: a wload scenario plugin that replays a HAR recording (what
//! a browser's developer tools save with "Save all as HAR"): every entry
//! in the order it started, with the recording's think times, each
//! response's status checked against the recorded one, and every request
//! named by its URL template so that ids do not make series of their own.
//!
//! ```sh
//! wload plugin info har-replay.wasm
//! wload run har-replay.wasm -p har=@recording.har --vus 10 --duration 1m
//! wload run har-replay.wasm -p har=@recording.har -p think=none \
//!     -p base-url=http://127.0.0.1:8080 -p hosts=shop.example.com
//! ```
//!
//! The HAR is parsed once per instance, in `configure` (so a recording
//! that cannot be replayed is refused before any request), into a
//! [`har::Plan`] that every iteration walks.

mod har;
mod template;
mod time;

use std::cell::RefCell;
use std::time::Duration;

use har::{Plan, Think};

wit_bindgen::generate!({
    path: "../../wit/test-0.2",
    world: "wload:scenario/plugin@0.2.0",
    // The wload:test interfaces are another package: bind them here too.
    generate_all,
});

use wload::scenario::types::{ParamKind, ParamSpec, ParamValue};
use wload::test::http::{self, BodyMode, Request, RequestOptions};
use wload::test::{checks, vu};

struct HarReplay;

thread_local! {
    /// This instance's plan, from `configure`.
    static PLAN: RefCell<Option<Plan>> = const { RefCell::new(None) };
}

fn spec(name: &str, kind: ParamKind, default: Option<&str>, docs: &str) -> ParamSpec {
    ParamSpec {
        name: name.to_owned(),
        kind,
        default: default.map(str::to_owned),
        choices: Vec::new(),
        docs: docs.to_owned(),
    }
}

impl Guest for HarReplay {
    fn describe() -> Description {
        Description {
            name: "har-replay".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            summary: "Replays a HAR recording with its think times, checking every status"
                .to_owned(),
            docs: "\
Each iteration sends the recording's entries in the order they started, one at a
time, as recorded: method, URL, headers and body. Redirects are not followed: the
recording has the request to the new location as an entry of its own. Entries that
got no response in the recording (status 0) are skipped; so are recorded cookie
headers, since the VU's cookie jar keeps the cookies the replayed responses set.

Every entry is checked with `METHOD NAME is STATUS` (the recorded status). Requests
are named by their URL template: path segments that look like ids (numbers, UUIDs,
long hexadecimal or mixed tokens) become {id}, query values become {}. Entries of a
page are in a group named by the page's title."
                .to_owned(),
            params: vec![
                spec(
                    "har",
                    ParamKind::Json,
                    None,
                    "The recording, HAR 1.1 or 1.2 (JSON): give it with -p har=@FILE.\n\
                     It must have at least one entry to replay.",
                ),
                spec(
                    "think",
                    ParamKind::Text,
                    Some("recorded"),
                    "How long to wait between requests.\n\
                     recorded: the recording's idle times (from the end of the entries \
                     before to the start of the next one; overlapping entries go back to back).\n\
                     none: no waiting.\n\
                     A duration (2s, 500ms): that long before each page after the first \
                     (before each entry when the recording has no pages).",
                ),
                spec(
                    "base-url",
                    ParamKind::Text,
                    Some(""),
                    "Send every entry to this origin instead of the recorded one, e.g. \
                     http://127.0.0.1:8080 (scheme, host and port; path and query are kept).\n\
                     Empty: the recorded URLs.",
                ),
                spec(
                    "hosts",
                    ParamKind::Text,
                    Some(""),
                    "Replay only entries to these hosts (comma-separated, as recorded, e.g. \
                     shop.example.com,api.example.com), leaving out third-party ones \
                     (analytics, CDNs).\nEmpty: every entry.",
                ),
                spec(
                    "check-status",
                    ParamKind::Boolean,
                    Some("true"),
                    "Check each response's status against the recorded one.",
                ),
            ],
        }
    }

    fn configure(params: Vec<Param>) -> Result<(), ParamError> {
        let mut options = har::Options::default();
        let mut recording = None;
        for p in params {
            match (p.name.as_str(), p.value) {
                ("har", ParamValue::Json(text)) => recording = Some(text),
                ("think", ParamValue::Text(t)) => {
                    options.think = parse_think(&t).map_err(|message| ParamError {
                        name: "think".to_owned(),
                        message,
                    })?;
                }
                ("base-url", ParamValue::Text(t)) => {
                    options.base_url = template::origin(&t).map_err(|message| ParamError {
                        name: "base-url".to_owned(),
                        message,
                    })?;
                }
                ("hosts", ParamValue::Text(t)) => {
                    options.hosts = t
                        .split(',')
                        .map(|h| h.trim().to_ascii_lowercase())
                        .filter(|h| !h.is_empty())
                        .collect();
                }
                ("check-status", ParamValue::Boolean(b)) => options.check_status = b,
                (name, _) => {
                    return Err(ParamError {
                        name: name.to_owned(),
                        message: "this parameter is not one har-replay takes".to_owned(),
                    });
                }
            }
        }
        let Some(recording) = recording else {
            return Err(ParamError {
                name: "har".to_owned(),
                message: "the recording is required".to_owned(),
            });
        };
        let plan = Plan::parse(&recording, options).map_err(|message| ParamError {
            name: "har".to_owned(),
            message,
        })?;
        PLAN.with(|p| *p.borrow_mut() = Some(plan));
        Ok(())
    }

    fn setup() -> Result<Option<String>, String> {
        Ok(None)
    }

    fn iteration() -> Result<(), String> {
        PLAN.with(|p| match p.borrow().as_ref() {
            Some(plan) => {
                replay(plan);
                Ok(())
            }
            None => Err("har-replay was not configured".to_owned()),
        })
    }

    fn teardown() -> Result<(), String> {
        Ok(())
    }
}

/// `think`'s value: a mode or a fixed duration.
fn parse_think(text: &str) -> Result<Think, String> {
    match text.trim() {
        "recorded" => Ok(Think::Recorded),
        "none" => Ok(Think::None),
        other => time::parse_duration(other).map(Think::Fixed).map_err(|_| {
            format!("{other:?} is not recorded, none or a duration such as 2s or 500ms")
        }),
    }
}

/// One pass over the recording.
fn replay(plan: &Plan) {
    let mut group: Option<&str> = None;
    for entry in &plan.entries {
        if group != entry.group.as_deref() {
            if group.is_some() {
                vu::group_exit();
            }
            if let Some(g) = &entry.group {
                vu::group_enter(g);
            }
            group = entry.group.as_deref();
        }
        if entry.think_before > Duration::ZERO {
            vu::sleep(u64::try_from(entry.think_before.as_nanos()).unwrap_or(u64::MAX));
        }
        let request = Request {
            method: entry.method.clone(),
            url: entry.url.clone(),
            headers: entry.headers.clone(),
            body: entry.body.clone(),
            tags: Vec::new(),
            name: Some(entry.name.clone()),
        };
        let options = RequestOptions {
            timeout: None,
            // The recording has the redirect's target as an entry.
            max_redirects: Some(0),
            expected_statuses: None,
            // A replay reads no body.
            body_mode: Some(BodyMode::Discard),
            max_body_size: None,
        };
        let sent = http::send(&request, &options);
        if plan.check_status {
            checks::check(&entry.check, sent.status == entry.status, &[]);
        }
    }
    if group.is_some() {
        vu::group_exit();
    }
}

export!(HarReplay);
