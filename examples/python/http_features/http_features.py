"""The HTTP client's features in Python, one per mode (`-e MODE=`), with
the same requests and check names as examples/rust/http_features, so that
the two can be compared run for run: `proto`, `redirect` (followed, and
`max_redirects=1`), `cookies` (kept across iterations, set and cleared by
the test), `expect` (`expected_statuses` per request), `limit`
(`max_body_size` per request, past which a body fails with 1060, or 1702
once decoded), and `batch`, `compress`, `error`, `keep`, `options`, `repeated`, `lazy`,
`metrics`, `groups`, `vu`, `fail` (docs/parity.md lists what each
exercises).

    python ../../../sdk/python/wload_build.py build http_features.py -o http_features.wasm
    wload run http_features.wasm --iterations 3 -e MODE=redirect -e BASE_URL=http://127.0.0.1:8080
"""

from wload import Counter, Gauge, Rate, Trend, check, env, group, http, iteration, log, scenario, sleep, vu_id
from wload.http import Request

COMPRESSIBLE = (
    "wload compresses well. wload compresses well. wload compresses well. "
    "wload compresses well. wload compresses well. wload compresses well."
)

counter = Counter("parity_counter")
gauge = Gauge("parity_gauge")
rate = Rate("parity_rate")
trend = Trend("parity_trend", is_time=True)

# Iterations this VU has run, kept by the test itself.
_done = [0]


def setup():
    return {"token": "t0k3n"}


def default(data):
    done = _done[0]
    _done[0] += 1
    base = env("BASE_URL", "http://127.0.0.1:8080")
    url = lambda path: base.rstrip("/") + path  # noqa: E731
    mode = env("MODE", "proto")
    if mode == "proto":
        res = http.get(url("/proto"))
        check("status is 200", res.status == 200)
        check("proto as expected", res.proto == env("EXPECT_PROTO", "HTTP/1.1"))
        check("server saw the proto", res.text == "HTTP/1.1")
        check("tls version as expected", res.tls_version == env("EXPECT_TLS", ""))
    elif mode == "redirect":
        res = http.get(url("/redirect/3"))
        check("redirect: followed to 200", res.status == 200)
        check("redirect: 4 hops counted", res.redirects == 4)
        check("redirect: final url", res.url == url("/"))
        limited = http.get(url("/redirect/3"), max_redirects=1)
        check("redirect: limit stops at 302", limited.status == 302)
        check("redirect: limit counted", limited.redirects == 1)
    elif mode == "cookies":
        if iteration() == 0:
            res = http.get(url("/cookies/set?session=abc&theme=dark"))
            check("cookies: server saw them", "session=abc" in res.text)
            return
        check("cookies: kept across iterations", http.cookies(base).get("session") == "abc")
        http.set_cookie(base, "manual=1; Path=/")
        text = http.get(url("/cookies")).text
        check("cookies: sent with own", "session=abc" in text and "manual=1" in text)
        http.clear_cookies()
        check("cookies: cleared", http.get(url("/cookies")).text == "")
        # Back to the state of the first iteration.
        http.get(url("/cookies/set?session=abc&theme=dark"))
    elif mode == "expect":
        ok = http.get(url("/status/404"), expected_statuses=[(200, 299), 404])
        check("expect: 404 answered", ok.status == 404)
        bad = http.get(url("/status/418"))
        check("expect: 418 answered", bad.status == 418)
    elif mode == "limit":
        cut = http.get(url("/bytes/4096"), max_body_size=1024)
        check("limit: past it fails with 1060", cut.error_code == 1060)
        whole = http.get(url("/bytes/4096"))
        check("limit: without it the body is whole", whole.error_code == 0 and len(whole.content) == 4096)
        # About 50 bytes on the wire, 137 once decoded.
        decoded = http.get(url("/compressed/gzip"), headers={"accept-encoding": "gzip"}, max_body_size=100)
        check("limit: decoded past it fails with 1702", decoded.error_code == 1702)
        res = http.batch([
            Request("GET", url("/bytes/4096"), max_body_size=1024),
            Request("GET", url("/bytes/4096")),
            Request("GET", url("/bytes/512"), max_body_size=1024),
        ])
        check("limit: batch, each its own", [r.error_code for r in res] == [1060, 0, 0])
    elif mode == "batch":
        n = int(env("BATCH_N", "12"))
        res = http.batch([Request("GET", url(f"/bytes/{1000 + i}")) for i in range(n)]
                         + [Request("GET", url("/delay/50")) for _ in range(n)])
        check("batch: all answered", all(r.status == 200 for r in res))
        check("batch: in order", all(r.body_length == 1000 + i for i, r in enumerate(res[:n])))
    elif mode == "error":
        res = http.get(env("TARGET", base), timeout=int(env("TIMEOUT_MS", "2000")) / 1000)
        want = int(env("EXPECT_CODE", "0"))
        if res.error_code != want:
            log(f"got code {res.error_code} ({res.error}), expected {want}", "warn")
        check("error: code as expected", res.error_code == want)
        check("error: status 0", res.status == 0)
        check("error: message", res.error is not None)
    elif mode == "compress":
        for alg in ("gzip", "deflate", "zstd"):
            res = http.get(url(f"/compressed/{alg}"), headers={"accept-encoding": alg})
            check(f"compress: {alg} decoded", res.text == COMPRESSIBLE)
            check(f"compress: {alg} length is decoded", res.body_length == len(COMPRESSIBLE))
    elif mode == "keep":
        # With --discard-response-bodies.
        dropped = http.get(url("/bytes/100"))
        check("keep: discarded by default", dropped.content == b"" and dropped.body_length == 100)
        kept = http.get(url("/bytes/100"), keep_body=True)
        check("keep: kept on request", len(kept.content) == 100)
    elif mode == "options":
        res = http.batch([
            Request("GET", url("/redirect/1"), max_redirects=0),
            Request("GET", url("/status/404"), expected_statuses=[404]),
            Request("GET", url("/status/404")),
        ])
        check("options: each its own", [r.status for r in res] == [302, 404, 404])
        check("options: redirect not followed", res[0].redirects == 0)
    elif mode == "repeated":
        res = http.get(url("/cookies/set?session=abc&theme=dark"), max_redirects=0)
        fields = res.headers.get_all("set-cookie")
        check("repeated: both set-cookie fields", len(fields) == 2
              and fields[0].startswith("session=abc") and fields[1].startswith("theme=dark"))
        check("repeated: Header is the first", res.headers["Set-Cookie"] == fields[0])
    elif mode == "lazy":
        n = int(env("LAZY_BYTES", "62914560"))
        res = http.get(url(f"/bytes/{n}"))
        check("lazy: answered", res.status == 200)
        check("lazy: length known", res.body_length == n)
        check("lazy: timed", res.timings.duration > 0)
        if env("READ") == "1":
            check("lazy: body read", len(res.content) == n)
    elif mode == "metrics":
        counter.add(1, {"kind": "a"})
        counter.add(2)
        gauge.set(done + 1)
        rate.add(True, {"kind": "a"})
        rate.add(False)
        rate.add(True)
        trend.add(10, {"kind": "a"})
        trend.add(20)
        check("metrics: recorded", True)
    elif mode == "groups":
        with group("outer"):
            check("groups: outer answered", http.get(url("/bytes/10")).body_length == 10)
            with group("inner"):
                check("groups: inner answered", http.get(url("/bytes/20")).body_length == 20)
        check("groups: outside", True)
    elif mode == "vu":
        check("vu: id", vu_id() >= 1)
        check("vu: iteration", iteration() == done)
        check("vu: scenario", scenario() == "default")
        check("vu: env", env("PARITY") == "yes")
        check("vu: env unset", env("PARITY_UNSET") is None)
        check("vu: setup data", data is not None and data.get("token") == "t0k3n")
        log(f"parity: vu {vu_id()} iteration {done}")
        sleep(0.01)
    elif mode == "fail":
        if done % 2 == 1:
            raise RuntimeError("parity: deliberate failure")
        check("fail: passing iteration", True)
    else:
        raise ValueError(f"unknown MODE {mode!r}")
