"""The imports of `wload:test@0.2.0`, as the native module `_wload` of the
MicroPython runtime gives them: `_wload.call(op, *args)`, `op` one of the
numbers below (sdk/python/runtime/src/host.rs dispatches on them).

Unlike componentize-py, where the top level of a test runs once at build
time, here it runs in each VU on the engine's first call (k6's init
code), so host calls are allowed there too.
"""

import _wload

call = _wload.call

SEND = 0
BATCH = 1
HEADERS = 2
HEADER = 3
TIMINGS = 4
BODY = 5
TEXT = 6
URL = 7
PROTO = 8
TLS_VERSION = 9
REDIRECTS = 10
RELEASE = 11
COOKIES = 12
SET_COOKIE = 13
CLEAR_COOKIES = 14
CHECK = 15
DEFINE = 16
ADD = 17
VU_ID = 18
ITERATION = 19
SCENARIO = 20
SLEEP = 21
ENV = 22
SETUP_DATA = 23
LOG = 24
REPORT_PANIC = 25
GROUP_ENTER = 26
GROUP_EXIT = 27


def fields(mapping):
    """`{k: v}` (or pairs) -> the list of `(name, value)` the host takes."""
    if not mapping:
        return []
    items = mapping.items() if hasattr(mapping, "items") else mapping
    return [(str(k), str(v)) for k, v in items]
