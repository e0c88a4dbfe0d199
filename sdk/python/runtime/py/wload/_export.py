"""Turns the test module into the exports of the world
`wload:test/test@0.2.0`: the runtime (sdk/python/runtime/c/port.c)
compiles the test at build time and hands its module and compiled top
level to `prepare`; the top level runs in each VU on the engine's first
call (k6's init code), then `options`, `setup`, `functions`,
`iteration` and `teardown` answer the engine's calls. Each returns a
str or None; an exception becomes the error (`error_text`).
"""

import json

import _wload

from .http import _release_all

# Module attributes that are not entry points a scenario can `exec`.
_RESERVED = ("default", "setup", "teardown", "options")

_state = {}


def prepare(module, top_level):
    _state["module"] = module
    _state["top_level"] = top_level


def _test():
    """The test's module, its top level run on first use."""
    test = _state.get("loaded")
    if test is None:
        test = _state["module"]
        _wload.exec_top(_state["top_level"], test)
        if not callable(getattr(test, "default", None)):
            raise TypeError("%s has no function default(data): wload runs it once per iteration"
                            % test.__name__)
        names = test.__dict__
        entries = sorted(
            name
            for name, value in names.items()
            if callable(value)
            and not name.startswith("_")
            and name not in _RESERVED
            and not isinstance(value, type)
            and getattr(value, "__globals__", None) is names
        )
        _state["entries"] = ["default"] + entries
        _state["loaded"] = test
    return test


def _data():
    if "data" not in _state:
        from ._host import SETUP_DATA, call
        text = call(SETUP_DATA)
        _state["data"] = None if text is None else json.loads(text)
    return _state["data"]


def error_text(e):
    """`Type: message (at file:line)`, the innermost frame."""
    where = ""
    for line in _wload.traceback(e).split("\n"):
        line = line.strip()
        if line.startswith("File "):
            parts = line.split('"')
            if len(parts) >= 3:
                rest = parts[2].split(",")
                lineno = rest[1].strip().split(" ")[-1] if len(rest) > 1 else "?"
                where = " (at %s:%s)" % (parts[1], lineno)
    message = str(e)
    name = type(e).__name__
    return ("%s: %s%s" % (name, message, where)) if message else name + where


def _run(fn, *args):
    try:
        return fn(*args)
    finally:
        _release_all()


def options():
    value = getattr(_test(), "options", None)
    return "" if value is None else json.dumps(value)


def setup():
    fn = getattr(_test(), "setup", None)
    if fn is None:
        return None
    result = _run(fn)
    return None if result is None else json.dumps(result)


def functions():
    _test()
    return "\n".join(_state["entries"])


def iteration(entry):
    test = _test()
    entries = _state["entries"]
    if not 0 <= entry < len(entries):
        raise IndexError("this test has no entry point number %d; it exports %s" % (entry, ", ".join(entries)))
    _run(getattr(test, entries[entry]), _data())


def teardown():
    fn = getattr(_test(), "teardown", None)
    if fn is not None:
        _run(fn, _data())
