"""HTTP through the engine's instrumented client.

`http.get(url)` returns a `Response` whose status, headers, timings and body
were read at once; the engine's buffer is released before the call returns.
Network errors do not raise: `status` is 0 and `error` says why, as in k6.
"""

from dataclasses import dataclass, field
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


@dataclass
class Response:
    status: int
    url: str
    headers: dict[str, str]
    timings: Timings
    error: Optional[str]
    error_code: int
    body_length: int
    """Bytes received; known even when the body was discarded."""
    content: Optional[bytes] = field(repr=False)
    """The body, or None when it was discarded."""
    proto: str = ""
    """`HTTP/1.1` or `HTTP/2.0`; "" when no response came."""
    tls_version: str = ""
    """`tls1.2`/`tls1.3`; "" for plain HTTP."""
    redirects: int = 0
    """Redirects followed to get this response."""

    @property
    def text(self) -> str:
        if self.content is None:
            raise ValueError(f"the body of {self.url} was discarded (discard_body=True)")
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return _json.loads(self.text)

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 400


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


def _read(handle: _wit.Response, req: _wit.Request) -> Response:
    with handle:  # drops the handle, returning the engine's buffer
        discard = req.body_mode == _wit.BodyMode.DISCARD
        return Response(
            status=handle.status(),
            url=handle.url(),
            headers=dict(handle.headers()),
            timings=_timings(handle.timings()),
            error=handle.error(),
            error_code=handle.error_code(),
            body_length=handle.body_len(),
            content=None if discard else handle.body(),
            proto=handle.proto(),
            tls_version=handle.tls_version(),
            redirects=handle.redirects(),
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
        if self.max_redirects is None and self.expected_statuses is None:
            return None
        expected = None
        if self.expected_statuses is not None:
            expected = []
            for s in self.expected_statuses:
                lo, hi = (s, s) if isinstance(s, int) else s
                expected.append(_wit.StatusRange(min=int(lo), max=int(hi)))
        return _wit.RequestOptions(
            max_redirects=self.max_redirects, expected_statuses=expected, body_mode=None
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
    return _read(handle, req)


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
    return [_read(h, r) for h, r in zip(handles, reqs)]


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
