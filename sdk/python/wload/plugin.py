"""Write a wload scenario plugin (the world `wload:scenario/plugin@0.2.0`,
see wit/test-0.2/scenario.wit) in Python: a module that describes itself and its
parameters, and runs one iteration of its scenario with them. Build it
with `wload-py build --plugin my_plugin.py`; run it with
`wload run my_plugin.wasm -p NAME=VALUE`.

    from wload import http, check
    from wload.plugin import Param, ParamError

    NAME = "ping"
    VERSION = "0.1.0"
    SUMMARY = "GETs one URL and checks it answers 200"
    PARAMS = [Param("url", "text", docs="The URL to GET.")]

    def configure(params):          # once per instance, before the rest
        global url
        url = params["url"]
        if not url.startswith("http"):
            raise ParamError("url", f"{url!r} is not an http(s) URL")

    def iteration():                # once per iteration, per VU
        check("status is 200", http.get(url).status == 200)

The module may also define `DOCS` (more text for `wload plugin info`),
`setup()` (its JSON-able result is what `wload.setup_data()` reads) and
`teardown()`. Parameters reach `configure` checked and converted by the
engine and this SDK: text as `str`, integer as `int`, number as `float`,
boolean as `bool`, duration as seconds (`float`), json parsed.
"""

from dataclasses import dataclass, field
from typing import Optional

KINDS = ("text", "integer", "number", "boolean", "duration", "json")


@dataclass
class Param:
    """One parameter: its name after `-p`, its kind (one of `KINDS`), the
    default in `-p`'s text form (None: required), the only values allowed
    (empty: any) and its docs (the first line is its summary)."""

    name: str
    kind: str = "text"
    default: Optional[str] = None
    choices: list[str] = field(default_factory=list)
    docs: str = ""


class ParamError(Exception):
    """Raised by `configure`: the run is refused before any request, with
    `message` and the docs of the parameter `name`."""

    def __init__(self, name: str, message: str):
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message
