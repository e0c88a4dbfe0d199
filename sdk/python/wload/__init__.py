"""wload: write load tests in Python.

A test is a module with a `default(data)` function, run once per
iteration, and optionally `options` (a dict of k6 options), `setup()`
(its JSON-able result is `data` everywhere), `teardown(data)` and more
functions for scenarios' `exec`. Build it with `wload-py build test.py`.

    from wload import http, check, Counter

    body_bytes = Counter("body_bytes")

    def default(data):
        res = http.get("http://127.0.0.1:8080/")
        check("status is 200", res.status == 200)
        body_bytes.add(res.body_length)
"""

from typing import Optional

from . import _host, http
from .metrics import Counter, Gauge, Rate, Trend
from wit_world.imports import vu as _vu

__all__ = [
    "http", "check", "group", "sleep", "env", "vu_id", "iteration", "scenario", "log",
    "Counter", "Gauge", "Rate", "Trend",
]


def check(name: str, ok: bool, tags: Optional[dict[str, str]] = None) -> bool:
    """Record one outcome of the check `name`; returns `ok`."""
    _host.guard("check()")
    return _host.checks.check(name, bool(ok), _host.fields(tags))


class _Group:
    """The scope of one group: entered and left with `with`."""

    def __init__(self, name: str):
        self.name = str(name)

    def __enter__(self):
        _host.guard("group()")
        _vu.group_enter(self.name)
        return self

    def __exit__(self, *_exc):
        _vu.group_exit()
        return False


def group(name: str, fn=None):
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


def sleep(seconds: float) -> None:
    """Pause this VU without using a core."""
    _host.guard("sleep()")
    _vu.sleep(max(0, int(seconds * 1e9)))


def env(key: str, default: Optional[str] = None) -> Optional[str]:
    """A `-e KEY=VALUE` variable (the process environment is not visible)."""
    _host.guard(f"env({key!r})")
    value = _vu.env(key)
    return default if value is None else value


def vu_id() -> int:
    """This VU's number, 1-based; 0 in setup and teardown."""
    _host.guard("vu_id()")
    return _vu.id()


def iteration() -> int:
    """Iterations this VU started before the current one."""
    _host.guard("iteration()")
    return _vu.iteration()


def scenario() -> str:
    _host.guard("scenario()")
    return _vu.scenario()


_LEVELS = {
    "debug": _vu.LogLevel.DEBUG,
    "info": _vu.LogLevel.INFO,
    "warn": _vu.LogLevel.WARN,
    "error": _vu.LogLevel.ERROR,
}


def log(message: str, level: str = "info") -> None:
    """A line in the engine's log, prefixed with the VU id."""
    _host.guard("log()")
    _vu.log(_LEVELS.get(level, _vu.LogLevel.INFO), str(message))
