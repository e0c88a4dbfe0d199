"""A user browsing a site: a page, two assets fetched in parallel, an API
call, a check on each, and one second of think time. Same as
examples/rust/browse, plus setup data: setup() runs once and every VU
receives its result as `data`.

    python ../../../sdk/python/wload_build.py build browse.py -o browse.wasm   # with componentize-py==0.25.1 installed
    wload run browse.wasm --vus 1000 --duration 30s -e BASE_URL=http://127.0.0.1:8080
"""

from wload import Trend, check, env, http, iteration, sleep, vu_id
from wload.http import Request

options = {"vus": 10, "duration": "10s"}

page_time = Trend("page_time", is_time=True)


def setup():
    return {"base": env("BASE_URL", "http://127.0.0.1:8080").rstrip("/")}


def default(data):
    base = data["base"]
    home = http.get(f"{base}/")
    check("home is 200", home.status == 200)

    # Dynamic URLs share one `name` tag, so they form one series.
    item = (vu_id() * 7 + iteration()) % 100
    page = http.get(f"{base}/bytes/1024?item={item}", name="/bytes/1024?item={item}")
    check("item page has 1024 bytes", page.body_length == 1024)
    page_time.add(home.timings.duration + page.timings.duration)

    # Static assets, fetched in parallel as a browser would.
    assets = http.batch([
        Request("GET", f"{base}/bytes/300", name="asset"),
        Request("GET", f"{base}/bytes/700", name="asset"),
    ])
    check("assets arrive in order", [a.body_length for a in assets] == [300, 700])

    api = http.post(f"{base}/echo", json={"vu": vu_id(), "item": item})
    check("echo returns the item", api.status == 200 and api.json().get("item") == item)

    sleep(1)
