"""Turns a test module into the exports of the world
`wload:test/test@0.2.0` (wit/test-0.2/test.wit).

The build tool generates an app module that calls `make(test_module)`
and names the result `WitWorld`, which componentize-py exports.
"""

import json
import traceback
from types import ModuleType
from typing import Any, List, Optional

from componentize_py_types import Err

from . import _host
from .http import _release_all
from wit_world.imports import vu as _vu

# Module attributes that are not entry points a scenario can `exec`.
_RESERVED = {"default", "setup", "teardown", "options"}


def _error_text(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(e).__name__}: {e}{where}"


def run(fn, *args) -> Any:
    """Call an entry point of the test (or plugin); an exception becomes
    the error the engine logs, and the VU goes on. The responses it left
    unread are released when it returns."""
    try:
        return fn(*args)
    except Exception as e:
        raise Err(_error_text(e)) from None
    finally:
        _release_all()


def make(test: ModuleType) -> type:
    if not callable(getattr(test, "default", None)):
        raise TypeError(f"{test.__name__} has no function default(data): wload runs it once per iteration")
    options = getattr(test, "options", None)
    # Plain data: serialised once, at build time.
    options_json = "" if options is None else json.dumps(options)
    entry_points = ["default"] + [
        name
        for name, value in vars(test).items()
        if callable(value)
        and not name.startswith("_")
        and name not in _RESERVED
        and getattr(value, "__module__", None) == test.__name__
        and not isinstance(value, type)
    ]
    # `iteration(entry)` indexes this list, which `functions()` returns.
    entry_fns = [getattr(test, name) for name in entry_points]
    state: dict[str, Any] = {}

    def data() -> Any:
        if "data" not in state:
            text = _vu.setup_data()
            state["data"] = None if text is None else json.loads(text)
        return state["data"]

    class WitWorld:
        def options(self) -> str:
            return options_json

        def setup(self) -> Optional[str]:
            _host.mark_running()
            fn = getattr(test, "setup", None)
            if fn is None:
                return None
            result = run(fn)
            return None if result is None else json.dumps(result)

        def functions(self) -> List[str]:
            return entry_points

        def iteration(self, entry: int) -> None:
            _host.mark_running()
            if not 0 <= entry < len(entry_fns):
                raise Err(f"this test has no entry point number {entry}; it exports {', '.join(entry_points)}")
            run(entry_fns[entry], data())

        def teardown(self) -> None:
            _host.mark_running()
            fn = getattr(test, "teardown", None)
            if fn is not None:
                run(fn, data())

    return WitWorld
