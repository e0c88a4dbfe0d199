"""Turns a plugin module (see `wload.plugin`) into the exports of the
world `wload:scenario/plugin@0.2.0` (wit/test-0.2/scenario.wit).

The build tool generates an app module that calls `make(plugin_module)`
and names the result `WitWorld`, which componentize-py exports.
"""

import json
from types import ModuleType
from typing import Any, List, Optional

from componentize_py_types import Err

from . import _host
from ._export import _error_text, run
from .plugin import KINDS, ParamError
# componentize-py names the plugin world's `wload:scenario/types` by its
# package, beside `wload:test/types`.
from wit_world.imports import wload_scenario_types as _t

_KIND = {
    "text": _t.ParamKind.TEXT,
    "integer": _t.ParamKind.INTEGER,
    "number": _t.ParamKind.NUMBER,
    "boolean": _t.ParamKind.BOOLEAN,
    "duration": _t.ParamKind.DURATION,
    "json": _t.ParamKind.JSON,
}


def _value(v: Any) -> Any:
    if isinstance(v, _t.ParamValue_Duration):
        return v.value / 1e9
    if isinstance(v, _t.ParamValue_Json):
        return json.loads(v.value)
    return v.value


def make(plugin: ModuleType) -> type:
    for attr in ("NAME", "VERSION", "SUMMARY"):
        if not isinstance(getattr(plugin, attr, None), str):
            raise TypeError(f"{plugin.__name__} has no {attr} string: a plugin describes itself")
    for fn in ("configure", "iteration"):
        if not callable(getattr(plugin, fn, None)):
            raise TypeError(f"{plugin.__name__} has no function {fn}(): a plugin needs it")
    params = list(getattr(plugin, "PARAMS", []))
    for p in params:
        if p.kind not in KINDS:
            raise TypeError(f"parameter {p.name}: kind {p.kind!r} is not one of {', '.join(KINDS)}")
    # Plain data: built once, at build time.
    description = _t.Description(
        name=plugin.NAME,
        version=plugin.VERSION,
        summary=plugin.SUMMARY,
        docs=str(getattr(plugin, "DOCS", "")),
        params=[
            _t.ParamSpec(
                name=p.name, kind=_KIND[p.kind], default=p.default, choices=list(p.choices), docs=p.docs
            )
            for p in params
        ],
    )

    class WitWorld:
        def describe(self) -> _t.Description:
            return description

        def configure(self, given: List[_t.Param]) -> None:
            try:
                plugin.configure({p.name: _value(p.value) for p in given})
            except ParamError as e:
                raise Err(_t.ParamError(name=e.name, message=e.message)) from None
            except Exception as e:
                raise Err(_t.ParamError(name="", message=_error_text(e))) from None
            _host.mark_running()

        def setup(self) -> Optional[str]:
            _host.mark_running()
            fn = getattr(plugin, "setup", None)
            if fn is None:
                return None
            result = run(fn)
            return None if result is None else json.dumps(result)

        def iteration(self) -> None:
            _host.mark_running()
            run(plugin.iteration)

        def teardown(self) -> None:
            _host.mark_running()
            fn = getattr(plugin, "teardown", None)
            if fn is not None:
                run(fn)

    return WitWorld
