"""The smallest useful wload test: GET ${BASE_URL}/, check the status, and
count the bytes received in a custom metric. No sleep: each VU sends
requests back to back. Same as examples/rust/hello.

    python ../../../sdk/python/wload_build.py build hello.py -o hello.wasm   # with componentize-py==0.25.1 installed
    wload run hello.wasm --vus 10 --duration 10s -e BASE_URL=http://127.0.0.1:8080
"""

from wload import Counter, check, env, http

body_bytes = Counter("body_bytes")


def default(data):
    base = env("BASE_URL", "http://127.0.0.1:8080").rstrip("/")
    res = http.get(f"{base}/")
    check("status is 200", res.status == 200)
    body_bytes.add(res.body_length)
