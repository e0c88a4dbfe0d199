"""The raw imports of the world `wload:test@0.2.0` (a test's, and a
plugin's through `wload:scenario/plugin@0.2.0`), guarded.

componentize-py runs the top level of a test once at build time and
snapshots the result; the engine is not there to answer then, so a host
call at the top level gets a clear error instead of a trap.
"""

from wit_world.imports import checks, http, metrics, vu  # noqa: F401  (re-exported)

_running = False


def mark_running() -> None:
    """Called on the first call from the engine."""
    global _running
    _running = True


def guard(what: str) -> None:
    if not _running:
        raise RuntimeError(
            f"{what} cannot be used at the top level of the test: in wload the top level runs once, "
            "at build time, where there is no engine; move it into default(), setup() or teardown()"
        )


def fields(mapping) -> list[tuple[str, str]]:
    """`{k: v}` (or pairs) → the WIT list of `(name, value)`."""
    if not mapping:
        return []
    items = mapping.items() if hasattr(mapping, "items") else mapping
    return [(str(k), str(v)) for k, v in items]
