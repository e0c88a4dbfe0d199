"""Custom metrics: counters, gauges, rates and trends.

Create them at the top level of a test: the engine is asked for the
metric on first use, inside a VU (the top level runs at build time).
"""

from typing import Optional

from . import _host
from wit_world.imports import metrics as _wit
from componentize_py_types import Err


class _Metric:
    _kind: _wit.MetricKind

    def __init__(self, name: str, is_time: bool = False) -> None:
        self.name = name
        self.is_time = is_time
        self._id: Optional[int] = None

    def _add(self, value: float, tags: Optional[dict[str, str]]) -> None:
        _host.guard(f"adding to the metric {self.name!r}")
        if self._id is None:
            try:
                self._id = _wit.define(self.name, self._kind, self.is_time)
            except Err as e:
                raise ValueError(f"cannot define metric {self.name!r}: {e.value}") from None
        _wit.add(self._id, float(value), _host.fields(tags))


class Counter(_Metric):
    """A sum: count and rate per second."""

    _kind = _wit.MetricKind.COUNTER

    def add(self, value: float = 1.0, tags: Optional[dict[str, str]] = None) -> None:
        self._add(value, tags)


class Gauge(_Metric):
    """The last value set, with min and max."""

    _kind = _wit.MetricKind.GAUGE

    def set(self, value: float, tags: Optional[dict[str, str]] = None) -> None:
        self._add(value, tags)


class Rate(_Metric):
    """The share of true outcomes."""

    _kind = _wit.MetricKind.RATE

    def add(self, ok: bool, tags: Optional[dict[str, str]] = None) -> None:
        self._add(1.0 if ok else 0.0, tags)


class Trend(_Metric):
    """A distribution; `Trend(name, is_time=True)` holds milliseconds."""

    _kind = _wit.MetricKind.TREND

    def add(self, value: float, tags: Optional[dict[str, str]] = None) -> None:
        self._add(value, tags)
