"""A shopper, in groups (same requests and checks as examples/rust/shop):
`home`, then `cart` with `add` and `view` nested inside it. Requests and
checks carry their group's path as the `group` tag (`::cart::add`), each
group's time is a `group_duration` sample, and the summary lists the
checks under their groups.

    python ../../../sdk/python/wload_build.py build shop.py -o shop.wasm   # with componentize-py==0.25.1 installed
    wload run shop.wasm --vus 10 --duration 30s -e BASE_URL=http://127.0.0.1:8080
"""

from wload import check, env, group, http


def default(_data):
    base = env("BASE_URL", "http://127.0.0.1:8080").rstrip("/")
    with group("home"):
        home = http.get(f"{base}/")
        check("home is 200", home.status == 200)

    with group("cart"):
        with group("add"):
            for item in (3, 7):
                res = http.post(f"{base}/echo", json={"item": item})
                check("item added", res.status == 200)
        with group("view"):
            cart = http.get(f"{base}/bytes/100")
            check("cart has 100 bytes", cart.body_length == 100)

    check("visit complete", True)
