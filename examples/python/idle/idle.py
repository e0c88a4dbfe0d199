"""A mostly idle VU: GET ${BASE_URL}/, check the status, sleep one second.
Same as examples/rust/idle: thousands of these measure what a Python VU
costs while it waits (its instance of the embedded interpreter, its
connection); the per-VU figures in docs/BENCHMARKS.md come from it.

    python ../../../sdk/python/wload_build.py build idle.py -o idle.wasm   # with componentize-py==0.25.1 installed
    wload run idle.wasm --vus 1000 --duration 10s -e BASE_URL=http://127.0.0.1:8080
"""

from wload import check, env, http, sleep


def default(data):
    base = env("BASE_URL", "http://127.0.0.1:8080").rstrip("/")
    res = http.get(f"{base}/")
    check("status is 200", res.status == 200)
    sleep(1)
