"""Several entry points for several scenarios: `default` browses, `api`
posts JSON. Each check names the scenario the VU runs in, so the summary
shows which scenario ran which function. Same as examples/rust/scenarios,
its own options (2 VUs, 4 iterations) included.

The engine calls an entry point by its index in the list the test's
`functions()` export gave (`["default", "api"]`), which a scenario's
`"exec": "api"` chooses:

    python ../../../sdk/python/wload_build.py build scenarios.py -o scenarios.wasm
    wload run scenarios.wasm --config two-scenarios.json -e BASE_URL=http://127.0.0.1:8080
"""

from wload import check, env, http, scenario, vu_id

options = {"vus": 2, "iterations": 4}


def _base() -> str:
    return env("BASE_URL", "http://127.0.0.1:8080").rstrip("/")


def default(data):
    res = http.get(f"{_base()}/")
    check(f"{scenario()} ran default", res.status == 200)


def api(data):
    res = http.post(f"{_base()}/echo", json={"vu": vu_id()})
    check(f"{scenario()} ran api", res.status == 200 and res.json().get("vu") == vu_id())
    # Scenario env overrides -e variables.
    check(f"{scenario()} sees ORIGIN={env('ORIGIN', '-e')}", True)
