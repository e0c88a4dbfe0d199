//! The HTTP client's features, one per mode (`-e MODE=`), each checked
//! with named checks so that a run's summary says what worked:
//!
//! - `proto`: `GET ${BASE_URL}/proto`; checks status 200, that the
//!   response's `proto` is `${EXPECT_PROTO}` and the server saw the same,
//!   and `tls_version` (`${EXPECT_TLS}`, empty for plain HTTP).
//! - `batch`: a batch of `${BATCH_N}` (default 12) requests to
//!   `/bytes/i` behind `/delay`-free URLs plus `/delay/50`; checks order.
//! - `redirect`: `/redirect/3` followed (3 hops), and with a limit of 1.
//! - `cookies`: cookies set by the server, kept across iterations, set and
//!   cleared by the test.
//! - `compress`: `/compressed/{gzip,deflate,zstd}` decoded.
//! - `error`: `GET ${TARGET}`; checks the error code is `${EXPECT_CODE}`.
//! - `expect`: `/status/404` expected per request; `/status/418` not.
//! - `limit`: a per-request body limit cuts `/bytes/4096` (1060) and a
//!   decoded gzip body (1702), alone and in a batch; without it the body
//!   arrives whole.
//! - `sdk`: query, form, multipart and JSON bodies through `/echo`.
//! - `keep`: with `--discard-response-bodies`, a request that keeps its body.
//! - `options`: a batch whose requests have options of their own
//!   (each its own `request-options` in `batch`): one follows no redirect,
//!   one expects its 404, one not.
//! - `repeated`: the two `set-cookie` fields of one response stay apart.
//! - `lazy`: `/bytes/${LAZY_BYTES}` (default 60 MiB) answered, its length
//!   and timings read, its body not (with `-e READ=1`, read too).
//! - `metrics`: one custom metric of each kind, tagged and not.
//! - `groups`: requests and checks in a group and in a group inside it.
//! - `vu`: the VU's id, iteration, scenario, `-e` variables, the setup
//!   data, a log line and a sleep.
//! - `fail`: every second iteration fails with a message.
//!
//! docs/parity.md lists these modes; tests/e2e/parity.rs runs each in
//! every language and compares the runs with this one.

use wload_sdk::http::{self, Multipart};
use wload_sdk::prelude::*;

struct Features {
    base: String,
    mode: String,
    /// Iterations this VU has run, kept by the test itself.
    done: u64,
    counter: Counter,
    gauge: Gauge,
    rate: Rate,
    trend: Trend,
}

impl Features {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base.trim_end_matches('/'))
    }
}

const COMPRESSIBLE: &str = "wload compresses well. wload compresses well. wload compresses well. \
    wload compresses well. wload compresses well. wload compresses well.";

impl Test for Features {
    fn new() -> Self {
        Features {
            base: vu::env_or("BASE_URL", "http://127.0.0.1:8080"),
            mode: vu::env_or("MODE", "proto"),
            done: 0,
            counter: Counter::new("parity_counter"),
            gauge: Gauge::new("parity_gauge"),
            rate: Rate::new("parity_rate"),
            trend: Trend::time("parity_trend"),
        }
    }

    fn setup() -> Result<Option<Value>> {
        Ok(Some(json!({"token": "t0k3n"})))
    }

    fn iteration(&mut self) -> Result<()> {
        let done = self.done;
        self.done += 1;
        match self.mode.as_str() {
            "proto" => {
                let res = http::get(&self.url("/proto"));
                let want = vu::env_or("EXPECT_PROTO", "HTTP/1.1");
                check("status is 200", res.status() == 200);
                check("proto as expected", res.proto() == want);
                let seen = if want == "HTTP/2.0" {
                    "HTTP/2.0"
                } else {
                    "HTTP/1.1"
                };
                check("server saw the proto", res.text() == seen);
                check(
                    "tls version as expected",
                    res.tls_version() == vu::env_or("EXPECT_TLS", ""),
                );
                if vu::iteration() == 0 && !res.tls_version().is_empty() {
                    check(
                        "handshake timed",
                        res.timings().tls_handshaking > Duration::ZERO,
                    );
                }
            }
            "batch" => {
                let n: usize = vu::env_or("BATCH_N", "12").parse()?;
                let reqs = (0..n)
                    .map(|i| Request::get(self.url(&format!("/bytes/{}", 1000 + i))))
                    .chain((0..n).map(|_| Request::get(self.url("/delay/50"))))
                    .collect();
                let res = http::batch(reqs);
                check("batch: all answered", res.iter().all(|r| r.status() == 200));
                check(
                    "batch: in order",
                    res.iter()
                        .take(n)
                        .enumerate()
                        .all(|(i, r)| r.body_len() == (1000 + i) as u64),
                );
            }
            "redirect" => {
                let res = http::get(&self.url("/redirect/3"));
                check("redirect: followed to 200", res.status() == 200);
                check("redirect: 4 hops counted", res.redirects() == 4);
                check("redirect: final url", res.url() == self.url("/"));
                let limited = Request::get(self.url("/redirect/3"))
                    .max_redirects(1)
                    .send();
                check("redirect: limit stops at 302", limited.status() == 302);
                check("redirect: limit counted", limited.redirects() == 1);
            }
            "cookies" => {
                if vu::iteration() == 0 {
                    let res = http::get(&self.url("/cookies/set?session=abc&theme=dark"));
                    check(
                        "cookies: server saw them",
                        res.text().contains("session=abc"),
                    );
                } else {
                    let jar = http::cookie(&self.base, "session");
                    check(
                        "cookies: kept across iterations",
                        jar.as_deref() == Some("abc"),
                    );
                    http::set_cookie(&self.base, "manual=1; Path=/")?;
                    let res = http::get(&self.url("/cookies"));
                    let text = res.text();
                    check(
                        "cookies: sent with own",
                        text.contains("session=abc") && text.contains("manual=1"),
                    );
                    http::clear_cookies();
                    let res = http::get(&self.url("/cookies"));
                    check("cookies: cleared", res.text().is_empty());
                    // Back to the state of the first iteration.
                    http::get(&self.url("/cookies/set?session=abc&theme=dark"));
                }
            }
            "compress" => {
                for alg in ["gzip", "deflate", "zstd"] {
                    let res = Request::get(self.url(&format!("/compressed/{alg}")))
                        .header("accept-encoding", alg)
                        .send();
                    check(
                        &format!("compress: {alg} decoded"),
                        res.text() == COMPRESSIBLE,
                    );
                    check(
                        &format!("compress: {alg} length is decoded"),
                        res.body_len() == COMPRESSIBLE.len() as u64,
                    );
                }
            }
            "error" => {
                let target = vu::env_or("TARGET", &self.base);
                let res = Request::get(target)
                    .timeout(Duration::from_millis(
                        vu::env_or("TIMEOUT_MS", "2000").parse()?,
                    ))
                    .send();
                let want: u32 = vu::env_or("EXPECT_CODE", "0").parse()?;
                if res.error_code() != want {
                    vu::warn(&format!(
                        "got code {} ({:?}), expected {want}",
                        res.error_code(),
                        res.error()
                    ));
                }
                check("error: code as expected", res.error_code() == want);
                check("error: status 0", res.status() == 0);
                check("error: message", res.error().is_some());
            }
            "expect" => {
                let ok = Request::get(self.url("/status/404"))
                    .expected_statuses(&[(200, 299), (404, 404)])
                    .send();
                check("expect: 404 answered", ok.status() == 404);
                let bad = http::get(&self.url("/status/418"));
                check("expect: 418 answered", bad.status() == 418);
            }
            "limit" => {
                let cut = Request::get(self.url("/bytes/4096"))
                    .max_body_size(1024)
                    .send();
                check("limit: past it fails with 1060", cut.error_code() == 1060);
                let whole = http::get(&self.url("/bytes/4096"));
                check(
                    "limit: without it the body is whole",
                    whole.error_code() == 0 && whole.body().len() == 4096,
                );
                // About 50 bytes on the wire, 137 once decoded.
                let decoded = Request::get(self.url("/compressed/gzip"))
                    .header("accept-encoding", "gzip")
                    .max_body_size(100)
                    .send();
                check(
                    "limit: decoded past it fails with 1702",
                    decoded.error_code() == 1702,
                );
                let res = http::batch(vec![
                    Request::get(self.url("/bytes/4096")).max_body_size(1024),
                    Request::get(self.url("/bytes/4096")),
                    Request::get(self.url("/bytes/512")).max_body_size(1024),
                ]);
                let codes: Vec<u32> = res.iter().map(Response::error_code).collect();
                check("limit: batch, each its own", codes == [1060, 0, 0]);
            }
            "sdk" => {
                let res = Request::get(self.url("/echo")).query("q", "a b&c").send();
                check(
                    "sdk: query encoded",
                    res.url().ends_with("/echo?q=a%20b%26c"),
                );
                let res = Request::post(self.url("/echo"))
                    .form(&[("name", "wl oad"), ("x", "1&2")])
                    .send();
                check("sdk: form body", res.text() == "name=wl+oad&x=1%262");
                check(
                    "sdk: form type",
                    res.header("content-type").as_deref()
                        == Some("application/x-www-form-urlencoded"),
                );
                let res = Request::post(self.url("/echo"))
                    .multipart(Multipart::new().text("a", "1").file(
                        "f",
                        "f.txt",
                        "text/plain",
                        "data",
                    ))
                    .send();
                let text = res.text();
                check(
                    "sdk: multipart body",
                    text.contains("name=\"a\"\r\n\r\n1\r\n")
                        && text.contains(
                            "filename=\"f.txt\"\r\ncontent-type: text/plain\r\n\r\ndata\r\n",
                        ),
                );
                let res = Request::post(self.url("/echo"))
                    .json(&json!({"n": 7}))?
                    .send();
                let back: Value = res.json()?;
                check("sdk: json round trip", back["n"] == 7);
            }
            "keep" => {
                let dropped = http::get(&self.url("/bytes/100"));
                check(
                    "keep: discarded by default",
                    dropped.body().is_empty() && dropped.body_len() == 100,
                );
                let kept = Request::get(self.url("/bytes/100")).keep_body().send();
                check("keep: kept on request", kept.body().len() == 100);
            }
            "options" => {
                let res = http::batch(vec![
                    Request::get(self.url("/redirect/1")).max_redirects(0),
                    Request::get(self.url("/status/404")).expected_statuses(&[(404, 404)]),
                    Request::get(self.url("/status/404")),
                ]);
                let statuses: Vec<u16> = res.iter().map(Response::status).collect();
                check("options: each its own", statuses == [302, 404, 404]);
                check("options: redirect not followed", res[0].redirects() == 0);
            }
            "repeated" => {
                let res = Request::get(self.url("/cookies/set?session=abc&theme=dark"))
                    .max_redirects(0)
                    .send();
                let set: Vec<String> = res
                    .headers()
                    .into_iter()
                    .filter(|(k, _)| k == "set-cookie")
                    .map(|(_, v)| v)
                    .collect();
                check(
                    "repeated: both set-cookie fields",
                    set.len() == 2
                        && set[0].starts_with("session=abc")
                        && set[1].starts_with("theme=dark"),
                );
                check(
                    "repeated: Header is the first",
                    res.header("Set-Cookie").as_ref() == set.first(),
                );
            }
            "lazy" => {
                let n: u64 = vu::env_or("LAZY_BYTES", "62914560").parse()?;
                let res = http::get(&self.url(&format!("/bytes/{n}")));
                check("lazy: answered", res.status() == 200);
                check("lazy: length known", res.body_len() == n);
                check("lazy: timed", res.timings().duration > Duration::ZERO);
                if vu::env_or("READ", "") == "1" {
                    check("lazy: body read", res.body().len() as u64 == n);
                }
            }
            "metrics" => {
                self.counter.add_tagged(1.0, &[("kind", "a")]);
                self.counter.add(2.0);
                self.gauge.set((done + 1) as f64);
                self.rate.add_tagged(true, &[("kind", "a")]);
                self.rate.add(false);
                self.rate.add(true);
                self.trend.add_tagged(10.0, &[("kind", "a")]);
                self.trend.add(20.0);
                check("metrics: recorded", true);
            }
            "groups" => {
                group("outer", || {
                    let res = http::get(&self.url("/bytes/10"));
                    check("groups: outer answered", res.body_len() == 10);
                    group("inner", || {
                        let res = http::get(&self.url("/bytes/20"));
                        check("groups: inner answered", res.body_len() == 20);
                    });
                });
                check("groups: outside", true);
            }
            "vu" => {
                check("vu: id", vu::id() >= 1);
                check("vu: iteration", vu::iteration() == done);
                check("vu: scenario", vu::scenario() == "default");
                check("vu: env", vu::env_or("PARITY", "") == "yes");
                check(
                    "vu: env unset",
                    vu::env_or("PARITY_UNSET", "unset") == "unset",
                );
                let data = vu::setup_data_value();
                check(
                    "vu: setup data",
                    data.is_some_and(|d| d["token"] == "t0k3n"),
                );
                vu::info(&format!("parity: vu {} iteration {done}", vu::id()));
                sleep(Duration::from_millis(10));
            }
            "fail" => {
                if done % 2 == 1 {
                    return Err("parity: deliberate failure".into());
                }
                check("fail: passing iteration", true);
            }
            other => return Err(format!("unknown MODE {other:?}").into()),
        }
        Ok(())
    }
}

wload_sdk::export_test!(Features);
