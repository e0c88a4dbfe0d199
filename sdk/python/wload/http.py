"""HTTP through the engine's instrumented client.

`http.get(url)` returns a `Response` whose fields are read from the engine
when first used: a body the test never reads is never copied into it.
Network errors do not raise: `status` is 0 and `error` says why, as in k6.
"""

from dataclasses import dataclass
import json as _json
from typing import Any, Optional

from . import _host
from wit_world.imports import http as _wit

_NS_PER_MS = 1e6


@dataclass
class Timings:
    """Where the time went, in milliseconds."""

    blocked: float
    connecting: float
    tls_handshaking: float
    sending: float
    waiting: float
    receiving: float
    duration: float


class Headers:
    """Response header fields in the order received, names lower case.
    Repeated fields (`set-cookie`) stay apart: `headers["set-cookie"]` is
    the first, `headers.get_all("set-cookie")` every one, and `items()`
    every `(name, value)` pair. Lookups ignore case."""

    def __init__(self, fields: list[tuple[str, str]]):
        self._fields = list(fields)

    def get(self, name: str, default: Optional[str] = None) -> Optional[str]:
        """The first field named `name`, or `default`."""
        name = name.lower()
        for k, v in self._fields:
            if k == name:
                return v
        return default

    def get_all(self, name: str) -> list[str]:
        """Every field named `name`, in order."""
        name = name.lower()
        return [v for k, v in self._fields if k == name]

    def items(self) -> list[tuple[str, str]]:
        return list(self._fields)

    def keys(self) -> list[str]:
        """The names, each once, in order of first appearance."""
        return list(dict.fromkeys(k for k, _ in self._fields))

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self):
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __repr__(self) -> str:
        return f"Headers({self._fields!r})"


# Responses whose engine handle is still open; `_release_all` (called when
# the engine's call into the test ends) drops them.
_open: list["Response"] = []


def _release_all() -> None:
    """Drop every open handle; what was not read by then is gone."""
    for r in _open:
        r._release()
    _open.clear()


_UNSET = object()


class Response:
    """A response. Each field is asked of the engine on first use and kept,
    so a body the test never reads stays in the engine. Reading the body
    (`content`, `text`, `json()`) reads the rest too and drops the handle,
    returning the engine's buffer; an unread response is dropped when the
    iteration (or setup, teardown) that sent it ends."""

    def __init__(self, handle: _wit.Response, req: _wit.Request):
        self._handle: Optional[_wit.Response] = handle
        self._discard = req.body_mode == _wit.BodyMode.DISCARD
        self._what = f"{req.method} {req.url}"
        self._cache: dict[str, Any] = {}
        _open.append(self)

    def _release(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.__exit__(None, None, None)

    def _field(self, key: str, read) -> Any:
        value = self._cache.get(key, _UNSET)
        if value is not _UNSET:
            return value
        if self._handle is None:
            raise RuntimeError(
                f"{key} of the response to {self._what} was not read in the iteration that sent it: "
                "wload releases responses when their iteration ends, so read what a later iteration needs before then"
            )
        value = read(self._handle)
        self._cache[key] = value
        return value

    @property
    def status(self) -> int:
        return self._field("status", lambda h: h.status())

    @property
    def url(self) -> str:
        return self._field("url", lambda h: h.url())

    @property
    def headers(self) -> Headers:
        return self._field("headers", lambda h: Headers(h.headers()))

    @property
    def timings(self) -> Timings:
        return self._field("timings", lambda h: _timings(h.timings()))

    @property
    def error(self) -> Optional[str]:
        return self._field("error", lambda h: h.error())

    @property
    def error_code(self) -> int:
        return self._field("error_code", lambda h: h.error_code())

    @property
    def body_length(self) -> int:
        """Bytes received; known even when the body was discarded."""
        return self._field("body_length", lambda h: h.body_len())

    @property
    def proto(self) -> str:
        """`HTTP/1.1` or `HTTP/2.0`; "" when no response came."""
        return self._field("proto", lambda h: h.proto())

    @property
    def tls_version(self) -> str:
        """`tls1.2`/`tls1.3`; "" for plain HTTP."""
        return self._field("tls_version", lambda h: h.tls_version())

    @property
    def redirects(self) -> int:
        """Redirects followed to get this response."""
        return self._field("redirects", lambda h: h.redirects())

    @property
    def content(self) -> Optional[bytes]:
        """The body, or None when it was discarded."""
        if self._discard:
            return None
        if "content" in self._cache:
            return self._cache["content"]
        body = self._field("content", lambda h: h.body())
        # Whoever reads the body reads the response: keep the rest and free
        # the engine's buffer now rather than at the end of the iteration.
        for key in _FIELDS:
            getattr(self, key)
        self._release()
        return body

    @property
    def text(self) -> str:
        content = self.content
        if content is None:
            raise ValueError(f"the body of {self._what} was discarded (discard_body=True)")
        return content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return _json.loads(self.text)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 400

    def __repr__(self) -> str:
        return f"<Response {self._what}: {self._cache.get('status', '?')}>"


# The fields besides the body, read with it.
_FIELDS = ("status", "url", "headers", "timings", "error", "error_code", "body_length",
           "proto", "tls_version", "redirects")


def _timings(t: _wit.Timings) -> Timings:
    return Timings(
        blocked=t.blocked / _NS_PER_MS,
        connecting=t.connecting / _NS_PER_MS,
        tls_handshaking=t.tls_handshaking / _NS_PER_MS,
        sending=t.sending / _NS_PER_MS,
        waiting=t.waiting / _NS_PER_MS,
        receiving=t.receiving / _NS_PER_MS,
        duration=t.duration / _NS_PER_MS,
    )


@dataclass
class Request:
    """A request to send later, e.g. in `batch`."""

    method: str
    url: str
    data: Optional[bytes | str] = None
    json: Any = None
    headers: Optional[dict[str, str]] = None
    tags: Optional[dict[str, str]] = None
    name: Optional[str] = None
    timeout: Optional[float] = None
    """Seconds."""
    discard_body: bool = False
    keep_body: bool = False
    """Keep the body even when the run discards bodies
    (`--discard-response-bodies`)."""
    max_redirects: Optional[int] = None
    """Redirects to follow (the run's default is 10); 0 returns the 3xx."""
    expected_statuses: Optional[list] = None
    """Statuses that count as expected in `http_req_failed`: ints and
    `(min, max)` ranges; None keeps the run's setting (200-399)."""
    max_body_size: Optional[int] = None
    """Largest response body kept, in bytes, on the wire and once decoded
    (None: the run's `--max-response-body-size`, 64 MiB); past it the
    request fails with error code 1060 (1702 decoded)."""

    def _options(self) -> Optional[_wit.RequestOptions]:
        """The WIT options beyond `request`, or None when none is set."""
        if self.max_redirects is None and self.expected_statuses is None and not self.keep_body:
            return None
        expected = None
        if self.expected_statuses is not None:
            expected = []
            for s in self.expected_statuses:
                lo, hi = (s, s) if isinstance(s, int) else s
                expected.append(_wit.StatusRange(min=int(lo), max=int(hi)))
        return _wit.RequestOptions(
            max_redirects=self.max_redirects,
            expected_statuses=expected,
            body_mode=_wit.BodyMode.KEEP if self.keep_body else None,
        )

    def _limits(self) -> Optional[_wit.RequestLimits]:
        """The WIT limits, or None when none is set."""
        if self.max_body_size is None:
            return None
        # Checked here: the bindings would fail a negative `u64` with a
        # message that does not name the option.
        if not isinstance(self.max_body_size, int) or self.max_body_size < 0:
            raise ValueError(
                f"max_body_size must be a whole number of bytes >= 0, not {self.max_body_size!r}"
            )
        return _wit.RequestLimits(max_body_size=self.max_body_size)

    def _wit(self) -> _wit.Request:
        headers = _host.fields(self.headers)
        body: Optional[bytes] = None
        if self.json is not None:
            body = _json.dumps(self.json).encode()
            if not any(k.lower() == "content-type" for k, _ in headers):
                headers.append(("content-type", "application/json"))
        elif isinstance(self.data, str):
            body = self.data.encode()
        elif self.data is not None:
            body = bytes(self.data)
        return _wit.Request(
            method=self.method.upper(),
            url=self.url,
            headers=headers,
            body=body,
            tags=_host.fields(self.tags),
            name=self.name,
            timeout=None if self.timeout is None else int(self.timeout * 1e9),
            body_mode=_wit.BodyMode.DISCARD if self.discard_body else _wit.BodyMode.KEEP,
        )


def _no_options() -> _wit.RequestOptions:
    """Options that leave everything to the run."""
    return _wit.RequestOptions(max_redirects=None, expected_statuses=None, body_mode=None)


def request(method: str, url: str, **kwargs: Any) -> Response:
    """Send one request. Keyword arguments are those of `Request`."""
    _host.guard("an HTTP request")
    spec = Request(method, url, **kwargs)
    req, opts, limits = spec._wit(), spec._options(), spec._limits()
    # The plainest call that carries what was set, as the Rust SDK does.
    if limits is not None:
        handle = _wit.send_with_limits(req, opts or _no_options(), limits)
    elif opts is not None:
        handle = _wit.send_with(req, opts)
    else:
        handle = _wit.send(req)
    return Response(handle, req)


def get(url: str, **kwargs: Any) -> Response:
    return request("GET", url, **kwargs)


def post(url: str, **kwargs: Any) -> Response:
    return request("POST", url, **kwargs)


def put(url: str, **kwargs: Any) -> Response:
    return request("PUT", url, **kwargs)


def patch(url: str, **kwargs: Any) -> Response:
    return request("PATCH", url, **kwargs)


def delete(url: str, **kwargs: Any) -> Response:
    return request("DELETE", url, **kwargs)


def head(url: str, **kwargs: Any) -> Response:
    return request("HEAD", url, **kwargs)


def batch(requests: list[Request]) -> list[Response]:
    """Send `requests` in parallel; responses come back in the same order."""
    _host.guard("an HTTP request")
    reqs = [r._wit() for r in requests]
    opts = [r._options() for r in requests]
    limits = [r._limits() for r in requests]
    if any(lim is not None for lim in limits):
        none, unlimited = _no_options(), _wit.RequestLimits(max_body_size=None)
        handles = _wit.batch_with_limits(
            [(r, o or none, lim or unlimited) for r, o, lim in zip(reqs, opts, limits)]
        )
    elif all(o is None for o in opts):
        handles = _wit.batch(reqs)
    else:
        handles = _wit.batch_with([(r, o or _no_options()) for r, o in zip(reqs, opts)])
    return [Response(h, r) for h, r in zip(handles, reqs)]


def cookies(url: str) -> dict[str, str]:
    """The cookies of this VU's jar that a request to `url` would send."""
    _host.guard("the cookie jar")
    return dict(_wit.cookies(url))


def set_cookie(url: str, cookie: str) -> None:
    """Put a cookie in the jar as if `url` had sent `set-cookie: <cookie>`
    (e.g. `"session=abc; Path=/"`); ValueError when it cannot be parsed."""
    _host.guard("the cookie jar")
    try:
        _wit.set_cookie(url, cookie)
    except Exception as e:  # the bindings raise `Err(message)`
        raise ValueError(str(getattr(e, "value", e))) from None


def clear_cookies() -> None:
    """Empty this VU's cookie jar."""
    _host.guard("the cookie jar")
    _wit.clear_cookies()
