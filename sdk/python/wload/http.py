"""HTTP through the engine's instrumented client.

`http.get(url)` returns a `Response` whose fields are read from the engine
when first used: a body the test never reads is never copied into it.
Network errors do not raise: `status` is 0 and `error` says why, as in k6.

A test binds `wload:test@0.2.0` (wit/test-0.2/test.wit), and so does a
plugin (its world `wload:scenario/plugin@0.2.0` imports the same
interfaces): one `send` and one `batch`, each request with its
`request-options`, and the answer's status, error and body length arrive
with it.
"""

from dataclasses import dataclass
import json as _json
from typing import Any, Optional

from . import _host
from wit_world.imports import http as _wit

_NS_PER_MS = 1e6

# k6's error code (`res.error_code`) of each `error-kind` of 0.2, by the
# kind's WIT name (the table of wit/test-0.2/test.wit's comments).
_CODES = {
    "generic": 1000,
    "invalid-url": 1020,
    "timeout": 1050,
    "body-too-large": 1060,
    "interrupted": 1070,
    "dns": 1100,
    "no-ip": 1101,
    "blocked-ip": 1110,
    "blocked-hostname": 1111,
    "tcp": 1200,
    "broken-pipe": 1201,
    "dial": 1210,
    "dial-timeout": 1211,
    "connection-refused": 1212,
    "connection-reset": 1220,
    "tls": 1300,
    "tls-unknown-authority": 1310,
    "tls-hostname": 1311,
    "http2": 1600,
    "http2-goaway": 1610,
    "http2-stream": 1630,
    "http2-connection": 1650,
    "decompression": 1701,
    "decoded-too-large": 1702,
}


def _kind_name(kind) -> str:
    """`ErrorKind.CONNECTION_REFUSED` -> "connection-refused"."""
    return kind.name.lower().replace("_", "-")


# Each `ErrorKind` member's name and code, made at build time (a kind
# without a code fails the build rather than a request).
_ERRORS = {k: (_kind_name(k), _CODES[_kind_name(k)]) for k in _wit.ErrorKind}


def _status_code(status: int) -> int:
    """k6's code for an answer without a network error: 1000 + status for
    a 4xx/5xx response, else 0."""
    return 1000 + status if status >= 400 else 0


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
    """A response. Its status, error and body length came with it (the
    `sent` record); every other field is asked of the engine on first use and
    kept, so a body the test never reads stays in the engine. Reading the body
    (`content`, `text`, `json()`) reads the rest too and drops the handle,
    returning the engine's buffer; an unread response is dropped when the
    iteration (or setup, teardown) that sent it ends."""

    def __init__(self, sent: _wit.Sent, spec: "Request"):
        self._handle: Optional[_wit.Response] = sent.response
        self._discard = spec.discard_body
        self._what = spec._what()
        # What `send` answered besides the handle.
        error = sent.error
        if error is None:
            kind, code, message = None, _status_code(sent.status), None
        else:
            (kind, code), message = _ERRORS[error.kind], error.message
        self._cache: dict[str, Any] = dict(
            status=sent.status, body_length=sent.body_len, error=message, error_kind=kind, error_code=code,
        )
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
        return self._cache["status"]

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
        return self._cache["error"]

    @property
    def error_code(self) -> int:
        """k6's error code: the network error's (1212 connection refused,
        1050 timeout, ...), else 1000 + status for a 4xx/5xx, else 0."""
        return self._cache["error_code"]

    @property
    def error_kind(self) -> Optional[str]:
        """What kind of failure `error` was, as WIT's `error-kind` names
        it (`"connection-refused"`, `"timeout"`, ...); None without one."""
        return self._cache["error_kind"]

    @property
    def body_length(self) -> int:
        """Bytes received; known even when the body was discarded."""
        return self._cache["body_length"]

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
_FIELDS = ("status", "url", "headers", "timings", "error", "error_code", "error_kind", "body_length",
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

    def _what(self) -> str:
        return f"{self.method.upper()} {self.url}"

    def _timeout_ns(self) -> Optional[int]:
        if self.timeout is None:
            return None
        # Checked here: the bindings would fail a negative `u64` with a
        # message that does not name the option.
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or not self.timeout >= 0:
            raise ValueError(f"timeout must be a number of seconds >= 0, not {self.timeout!r}")
        return int(self.timeout * 1e9)

    def _max_body_size(self) -> Optional[int]:
        if self.max_body_size is None:
            return None
        if isinstance(self.max_body_size, bool) or not isinstance(self.max_body_size, int) or self.max_body_size < 0:
            raise ValueError(
                f"max_body_size must be a whole number of bytes >= 0, not {self.max_body_size!r}"
            )
        return self.max_body_size

    def _expected(self) -> Optional[list]:
        if self.expected_statuses is None:
            return None
        expected = []
        for s in self.expected_statuses:
            lo, hi = (s, s) if isinstance(s, int) else s
            expected.append(_wit.StatusRange(min=int(lo), max=int(hi)))
        return expected

    def _headers_and_body(self) -> tuple[list[tuple[str, str]], Optional[bytes]]:
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
        return headers, body

    def _wire(self) -> tuple:
        """The `request` record and its `request-options`, every option
        `none` that the test left to the run."""
        headers, body = self._headers_and_body()
        req = _wit.Request(
            method=self.method.upper(),
            url=self.url,
            headers=headers,
            body=body,
            tags=_host.fields(self.tags),
            name=self.name,
        )
        body_mode = None
        if self.discard_body:
            body_mode = _wit.BodyMode.DISCARD
        elif self.keep_body:
            body_mode = _wit.BodyMode.KEEP
        opts = _wit.RequestOptions(
            timeout=self._timeout_ns(),
            max_redirects=self.max_redirects,
            expected_statuses=self._expected(),
            body_mode=body_mode,
            max_body_size=self._max_body_size(),
        )
        return req, opts


def request(method: str, url: str, **kwargs: Any) -> Response:
    """Send one request. Keyword arguments are those of `Request`."""
    _host.guard("an HTTP request")
    spec = Request(method, url, **kwargs)
    req, opts = spec._wire()
    return Response(_wit.send(req, opts), spec)


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
    specs = list(requests)
    sent = _wit.batch([s._wire() for s in specs])
    return [Response(s, spec) for s, spec in zip(sent, specs)]


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
