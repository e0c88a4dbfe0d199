//! Scenario plugins (`wit/test-0.2/scenario.wit`), run directly: the har-replay
//! plugin of `plugins/` replaying a HAR that the test writes (pointing at
//! the local target server, or moved onto it with `base-url`), its
//! parameters from `-p`, `@file` and the options file, refusals of wrong
//! parameters before any request, and `wload plugin info`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{
    self, Finished, plugin, plugin_info, run, run_plugin, scratch, server, wload,
};

const LIMIT: Duration = Duration::from_secs(120);

/// A recording of one page, "Shop", as a browser saves it, with requests
/// to `origin`: 200 ms of idle time before the second entry and 100 ms
/// before each of the others; two `/bytes/N` entries that one URL
/// template names; a 404 recorded as such; a status the server no longer
/// gives (recorded 200, now 500); a request the browser cancelled (status
/// 0, not replayed); and a third-party request (left out with `hosts`).
fn recording(origin: &str) -> Value {
    let entry = |ms: u32, method: &str, url: &str, status: u16| {
        json!({
            "pageref": "page_1",
            "startedDateTime": format!("2026-03-01T09:30:00.{ms:03}Z"),
            "time": 10,
            "request": {
                "method": method,
                "url": url,
                "httpVersion": "HTTP/1.1",
                "headers": [
                    {"name": "Accept", "value": "*/*"},
                    {"name": "Cookie", "value": "stale=1"}
                ],
                "queryString": [],
                "cookies": [],
                "headersSize": -1,
                "bodySize": 0
            },
            "response": {"status": status, "statusText": "", "headers": [], "content": {"size": 0}},
            "timings": {"send": 1, "wait": 8, "receive": 1}
        })
    };
    let mut post = entry(540, "POST", &format!("{origin}/echo"), 200);
    post["request"]["postData"] = json!({"mimeType": "application/json", "text": "{\"item\": 7}"});
    json!({"log": {
        "version": "1.2",
        "creator": {"name": "WebInspector", "version": "537.36"},
        "pages": [{"id": "page_1", "title": "Shop", "startedDateTime": "2026-03-01T09:30:00.000Z"}],
        "entries": [
            entry(0, "GET", &format!("{origin}/"), 200),
            entry(210, "GET", &format!("{origin}/bytes/10"), 200),
            entry(320, "GET", &format!("{origin}/bytes/2000"), 200),
            entry(430, "GET", &format!("{origin}/status/404"), 404),
            entry(440, "GET", "http://analytics.example.net/collect?id=1", 204),
            post,
            entry(650, "GET", &format!("{origin}/status/500"), 200),
            entry(655, "GET", &format!("{origin}/slow"), 0),
        ]
    }})
}

/// Entries replayed per iteration: all but the third-party and the
/// cancelled ones.
const REPLAYED: u64 = 6;

fn write(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(value).expect("JSON"))
        .expect("write a scratch file");
    path.display().to_string()
}

/// `wload run <har-replay> ARGS --summary-export`, from `dir`.
fn replay(dir: &Path, args: &[&str]) -> Finished {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    run_plugin("har-replay", dir, &args, LIMIT)
}

/// `(passes, fails)` of the check `name` in the group `Shop`.
fn shop_check(run: &Finished, name: &str) -> (u64, u64) {
    let group = &run.summary["root_group"]["groups"][0];
    assert_eq!(group["path"], "::Shop", "{:#}", run.summary["root_group"]);
    let check = group["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name:?} in {:#}", group["checks"]));
    (
        check["passes"].as_u64().expect("passes"),
        check["fails"].as_u64().expect("fails"),
    )
}

/// A recording of another site, moved onto the local server with
/// `base-url`, parameters from the options file (the HAR as `@file`
/// relative to it) and from flags (which win): every replayed entry
/// reaches the server, each is checked against its recorded status,
/// requests are named by URL template, the page is a group, and the
/// recorded idle times are waited.
#[test]
fn har_replay_replays_a_recording_with_its_statuses_names_and_think_times() {
    let server = server();
    let dir = scratch("plugin-har-replay");
    write(&dir, "shop.har", &recording("https://shop.example.com"));
    let options = write(
        &dir,
        "options.json",
        &json!({
            "iterations": 3,
            "thresholds": {
                "http_reqs{group:::Shop}": [format!("count=={}", 3 * REPLAYED)],
                "http_reqs{method:POST}": ["count==3"]
            },
            "params": {
                "har": "@shop.har",
                "hosts": "shop.example.com",
                "think": "none",
                "base-url": "http://127.0.0.1:1"
            }
        }),
    );
    let base = server.base_url();
    let run = replay(
        &dir,
        &[
            "--config",
            &options,
            "-p",
            &format!("base-url={base}"),
            "-p",
            "think=recorded",
        ],
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(server.stats.requests(), 3 * REPLAYED);
    assert_eq!(run.metric("http_reqs", "count"), (3 * REPLAYED) as f64);
    let m = &run.summary["metrics"];
    assert_eq!(
        m["http_reqs{group:::Shop}"]["thresholds"][format!("count=={}", 3 * REPLAYED)]["ok"],
        true
    );
    assert_eq!(
        m["http_reqs{method:POST}"]["thresholds"]["count==3"]["ok"],
        true
    );

    // One template for both /bytes/N entries: their checks are one.
    assert_eq!(
        shop_check(&run, &format!("GET {base}/bytes/{{id}} is 200")),
        (6, 0)
    );
    assert_eq!(shop_check(&run, &format!("GET {base}/ is 200")), (3, 0));
    assert_eq!(
        shop_check(&run, &format!("POST {base}/echo is 200")),
        (3, 0)
    );
    assert_eq!(
        shop_check(&run, &format!("GET {base}/status/{{id}} is 404")),
        (3, 0)
    );
    // The server no longer answers as recorded.
    assert_eq!(
        shop_check(&run, &format!("GET {base}/status/{{id}} is 200")),
        (0, 3)
    );

    // Idle times: 200 ms, then 100 ms before each of the four others
    // (the third-party entry's time is left out, its gap kept).
    let shortest = run.metric("iteration_duration", "min");
    assert!(
        shortest >= 600.0,
        "iterations of {shortest} ms did not wait the recorded 600 ms"
    );
}

/// Refused before any request, exit code 104, with the docs of the
/// parameter at fault: a missing one, an unknown one, a value of the
/// wrong kind, a file that cannot be read, a recording the plugin's own
/// check refuses, a `think` the plugin cannot read; and `-p` given to a
/// test.
#[test]
fn wrong_or_missing_parameters_are_refused_before_any_request() {
    let server = server();
    let dir = scratch("plugin-refusals");
    write(&dir, "shop.har", &recording(&server.base_url()));
    write(&dir, "not-har.json", &json!({"entries": []}));
    let cases: [(&[&str], &[&str]); 6] = [
        (
            &["-p", "think=none"],
            &[
                "parameter har is required",
                "    har (json, required)",
                "The recording, HAR 1.1 or 1.2",
            ],
        ),
        (
            &["-p", "har=@shop.har", "-p", "colour=red"],
            &[
                "-p colour: har-replay has no parameter \"colour\"; it takes har, think, base-url, hosts, check-status",
            ],
        ),
        (
            &["-p", "har=@shop.har", "-p", "check-status=maybe"],
            &[
                "-p check-status: \"maybe\" is not true or false",
                "    check-status (boolean, default \"true\")",
            ],
        ),
        (
            &["-p", "har=@missing.har"],
            &[
                "-p har: cannot read missing.har",
                "    har (json, required)",
            ],
        ),
        (
            &["-p", "har=@not-har.json"],
            &["har: not a HAR recording", "    har (json, required)"],
        ),
        (
            &["-p", "har=@shop.har", "-p", "think=sometimes"],
            &[
                "think: \"sometimes\" is not recorded, none or a duration",
                "    think (text, default \"recorded\")",
            ],
        ),
    ];
    for (args, expected) in cases {
        let run = replay(&dir, args);
        assert_eq!(run.code(), Some(104), "{args:?}: stderr: {}", run.stderr());
        for e in expected {
            assert!(
                run.stderr().contains(e),
                "{args:?}: no {e:?} in: {}",
                run.stderr()
            );
        }
    }
    let mut cmd = wload();
    cmd.arg("run")
        .arg(support::guest("hello"))
        .args(["-e", &format!("BASE_URL={}", server.base_url())])
        .args(["-p", "think=none", "--quiet"]);
    let out = run(cmd, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(104), "stderr: {stderr}");
    assert!(stderr.contains("is a test, not a plugin"), "{stderr}");
    assert_eq!(server.stats.requests(), 0, "a refused run sent requests");
}

/// `wload plugin info`: the description as text (every parameter with
/// its kind, default or "required", and docs) and as JSON; a test is not
/// a plugin.
#[test]
fn plugin_info_prints_the_description_and_parameters() {
    let text = plugin_info(&plugin("har-replay"), &[], LIMIT);
    assert!(
        text.starts_with("har-replay 0.1.0: Replays a HAR recording"),
        "{text}"
    );
    for line in [
        "    har (json, required)",
        "    think (text, default \"recorded\")",
        "    base-url (text, default \"\")",
        "    hosts (text, default \"\")",
        "    check-status (boolean, default \"true\")",
        "        Check each response's status against the recorded one.",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "no line {line:?} in:\n{text}"
        );
    }

    let doc: Value = serde_json::from_str(&plugin_info(&plugin("har-replay"), &["--json"], LIMIT))
        .expect("JSON on stdout");
    assert_eq!(doc["name"], "har-replay");
    assert_eq!(doc["world"], "wload:scenario/plugin@0.2.0");
    let params: Vec<(&str, &str, bool)> = doc["params"]
        .as_array()
        .expect("params")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().expect("name"),
                p["kind"].as_str().expect("kind"),
                p["required"].as_bool().expect("required"),
            )
        })
        .collect();
    assert_eq!(
        params,
        [
            ("har", "json", true),
            ("think", "text", false),
            ("base-url", "text", false),
            ("hosts", "text", false),
            ("check-status", "boolean", false),
        ]
    );

    let mut cmd = wload();
    cmd.args(["plugin", "info"]).arg(support::guest("hello"));
    let out = run(cmd, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(104), "{stderr}");
    assert!(stderr.contains("is a test, not a plugin"), "{stderr}");
}

/// The example recording shipped with the plugin (pointing at the target
/// server's usual port, moved onto this one with `base-url`) replays with
/// every check passing.
#[test]
fn the_example_recording_passes_every_check() {
    let server = server();
    let dir = scratch("plugin-example");
    let example = support::repo_root().join("plugins/har-replay/example.har");
    let har = format!("har=@{}", example.display());
    let base = format!("base-url={}", server.base_url());
    let run = replay(
        &dir,
        &[
            "-p",
            &har,
            "-p",
            &base,
            "-p",
            "think=none",
            "--iterations",
            "2",
        ],
    );
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    assert_eq!(server.stats.requests(), 2 * 6);
    assert_eq!(run.metric("checks", "passes"), 12.0);
    assert_eq!(run.metric("checks", "fails"), 0.0);
}
