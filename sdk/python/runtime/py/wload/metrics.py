"""Custom metrics: counters, gauges, rates and trends.

Create them at the top level of a test (it runs in each VU): the engine
is asked for the metric on first use.
"""

from . import _host

_call = _host.call


class _Metric:
    _kind = 0

    def __init__(self, name, is_time=False):
        self.name = name
        self.is_time = is_time
        self._id = None

    def _add(self, value, tags):
        if self._id is None:
            try:
                self._id = _call(_host.DEFINE, self.name, self._kind, bool(self.is_time))
            except ValueError as e:
                raise ValueError("cannot define metric %r: %s" % (self.name, e))
        _call(_host.ADD, self._id, float(value), _host.fields(tags))


class Counter(_Metric):
    """A sum: count and rate per second."""

    _kind = 0

    def add(self, value=1.0, tags=None):
        self._add(value, tags)


class Gauge(_Metric):
    """The last value set, with min and max."""

    _kind = 1

    def set(self, value, tags=None):
        self._add(value, tags)


class Rate(_Metric):
    """The share of true outcomes."""

    _kind = 2

    def add(self, ok, tags=None):
        self._add(1.0 if ok else 0.0, tags)


class Trend(_Metric):
    """A distribution; `Trend(name, is_time=True)` holds milliseconds."""

    _kind = 3

    def add(self, value, tags=None):
        self._add(value, tags)
