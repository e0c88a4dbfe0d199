"""The HTTP client's features in Python, one per mode (`-e MODE=`), with
the same requests and check names as examples/rust/http_features, so that
the two can be compared run for run: `proto`, `redirect` (followed, and
`max_redirects=1`), `cookies` (kept across iterations, set and cleared by
the test), `expect` (`expected_statuses` per request) and `limit`
(`max_body_size` per request, past which a body fails with 1060, or 1702
once decoded).

    python ../../../sdk/python/wload_build.py build http_features.py -o http_features.wasm
    wload run http_features.wasm --iterations 3 -e MODE=redirect -e BASE_URL=http://127.0.0.1:8080
"""

from wload import check, env, http, iteration
from wload.http import Request


def default(_data):
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
    else:
        raise ValueError(f"unknown MODE {mode!r}")
