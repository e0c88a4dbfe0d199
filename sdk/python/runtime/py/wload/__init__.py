"""wload: write load tests in Python (the MicroPython runtime).

A test is a module with a `default(data)` function, run once per
iteration, and optionally `options` (a dict of k6 options), `setup()`
(its JSON-able result is `data` everywhere), `teardown(data)` and more
functions for scenarios' `exec`. `wload run test.py` runs it.

    from wload import http, check, Counter

    body_bytes = Counter("body_bytes")

    def default(data):
        res = http.get("http://127.0.0.1:8080/")
        check("status is 200", res.status == 200)
        body_bytes.add(res.body_length)

The same API as the CPython SDK (sdk/python/wload); docs/sdk-python.md
says what MicroPython leaves out.
"""

from . import _host, http
from .metrics import Counter, Gauge, Rate, Trend

__all__ = [
    "http", "check", "group", "sleep", "env", "vu_id", "iteration", "scenario", "log",
    "Counter", "Gauge", "Rate", "Trend",
]

_call = _host.call


def check(name, ok, tags=None):
    """Record one outcome of the check `name`; returns `ok`."""
    return _call(_host.CHECK, str(name), bool(ok), _host.fields(tags))


class _Group:
    """The scope of one group: entered and left with `with`."""

    def __init__(self, name):
        self.name = str(name)

    def __enter__(self):
        _call(_host.GROUP_ENTER, self.name)
        return self

    def __exit__(self, *_exc):
        _call(_host.GROUP_EXIT)
        return False


def group(name, fn=None):
    """k6's `group`: requests, checks and metrics inside carry the tag
    `group=::outer::name`, and each pass is timed in `group_duration`.

        with group("login"):
            ...

    or `group("login", fn)`, which runs `fn()` inside and returns its result.
    """
    if fn is None:
        return _Group(name)
    with _Group(name):
        return fn()


def sleep(seconds):
    """Pause this VU without using a core."""
    _call(_host.SLEEP, max(0, seconds * 1e9))


def env(key, default=None):
    """A `-e KEY=VALUE` variable (the process environment is not visible)."""
    value = _call(_host.ENV, str(key))
    return default if value is None else value


def vu_id():
    """This VU's number, 1-based; 0 in setup and teardown."""
    return _call(_host.VU_ID)


def iteration():
    """Iterations this VU started before the current one."""
    return _call(_host.ITERATION)


def scenario():
    return _call(_host.SCENARIO)


_LEVELS = {"debug": 0, "info": 1, "warn": 2, "error": 3}


def log(message, level="info"):
    """A line in the engine's log, prefixed with the VU id."""
    _call(_host.LOG, _LEVELS.get(level, 1), str(message))
