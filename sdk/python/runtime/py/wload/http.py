"""HTTP through the engine's instrumented client.

`http.get(url)` returns a `Response` whose status, error and body length
came with it; every other field is read from the engine when first used:
a body the test never reads is never copied into the VU. Network errors do
not raise: `status` is 0 and `error` says why, as in k6.
"""

import json as _json

from . import _host

_call = _host.call

# k6's error code of each `error-kind` (wit/test-0.2/test.wit), by code.
_KINDS = {
    1000: "generic", 1020: "invalid-url", 1050: "timeout", 1060: "body-too-large",
    1070: "interrupted", 1100: "dns", 1101: "no-ip", 1110: "blocked-ip",
    1111: "blocked-hostname", 1200: "tcp", 1201: "broken-pipe", 1210: "dial",
    1211: "dial-timeout", 1212: "connection-refused", 1220: "connection-reset",
    1300: "tls", 1310: "tls-unknown-authority", 1311: "tls-hostname", 1600: "http2",
    1610: "http2-goaway", 1630: "http2-stream", 1650: "http2-connection",
    1701: "decompression", 1702: "decoded-too-large",
}


class Timings:
    """Where the time went, in milliseconds."""

    def __init__(self, blocked, connecting, tls_handshaking, sending, waiting, receiving, duration):
        self.blocked = blocked
        self.connecting = connecting
        self.tls_handshaking = tls_handshaking
        self.sending = sending
        self.waiting = waiting
        self.receiving = receiving
        self.duration = duration

    def __repr__(self):
        return "Timings(duration=%r)" % self.duration


class Headers:
    """Response header fields in the order received, names lower case.
    Repeated fields (`set-cookie`) stay apart: `headers["set-cookie"]` is
    the first, `headers.get_all("set-cookie")` every one, and `items()`
    every `(name, value)` pair. Lookups ignore case."""

    def __init__(self, fields):
        self._fields = list(fields)

    def get(self, name, default=None):
        """The first field named `name`, or `default`."""
        name = name.lower()
        for k, v in self._fields:
            if k == name:
                return v
        return default

    def get_all(self, name):
        """Every field named `name`, in order."""
        name = name.lower()
        return [v for k, v in self._fields if k == name]

    def items(self):
        return list(self._fields)

    def keys(self):
        """The names, each once, in order of first appearance."""
        seen = []
        for k, _ in self._fields:
            if k not in seen:
                seen.append(k)
        return seen

    def __getitem__(self, name):
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name):
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def __repr__(self):
        return "Headers(%r)" % (self._fields,)


# Responses whose engine handle is still open; `_release_all` (called when
# the engine's call into the test ends) drops them.
_open = []


def _release_all():
    """Drop every open handle; what was not read by then is gone."""
    for r in _open:
        r._release()
    _open.clear()


class Response:
    """A response. Its status, error and body length came with it; every
    other field is asked of the engine on first use and kept, so a body
    the test never reads stays in the engine. Reading the body (`content`,
    `text`, `json()`) reads the rest too and drops the handle, returning
    the engine's buffer; an unread response is dropped when the iteration
    (or setup, teardown) that sent it ends."""

    def __init__(self, sent, what, discard):
        status, code, message, body_len, handle = sent
        self.status = status
        self.body_length = body_len
        self.error = message
        if message is None:
            self.error_code = 1000 + status if status >= 400 else 0
            self.error_kind = None
        else:
            self.error_code = code
            self.error_kind = _KINDS.get(code, "generic")
        self._handle = handle
        self._what = what
        self._discard = discard
        self._cache = {}
        _open.append(self)

    def _release(self):
        handle, self._handle = self._handle, None
        if handle is not None:
            _call(_host.RELEASE, handle)

    def _field(self, key, op):
        cache = self._cache
        if key in cache:
            return cache[key]
        if self._handle is None:
            raise RuntimeError(
                "%s of the response to %s was not read in the iteration that sent it: wload releases "
                "responses when their iteration ends, so read what a later iteration needs before then"
                % (key, self._what)
            )
        value = _call(op, self._handle)
        cache[key] = value
        return value

    @property
    def url(self):
        return self._field("url", _host.URL)

    @property
    def headers(self):
        cache = self._cache
        if "headers" not in cache:
            cache["headers"] = Headers(self._field("header_fields", _host.HEADERS))
        return cache["headers"]

    @property
    def timings(self):
        cache = self._cache
        if "timings" not in cache:
            cache["timings"] = Timings(*self._field("timing_values", _host.TIMINGS))
        return cache["timings"]

    @property
    def proto(self):
        """`HTTP/1.1` or `HTTP/2.0`; "" when no response came."""
        return self._field("proto", _host.PROTO)

    @property
    def tls_version(self):
        """`tls1.2`/`tls1.3`; "" for plain HTTP."""
        return self._field("tls_version", _host.TLS_VERSION)

    @property
    def redirects(self):
        """Redirects followed to get this response."""
        return self._field("redirects", _host.REDIRECTS)

    @property
    def content(self):
        """The body, or None when it was discarded."""
        if self._discard:
            return None
        cache = self._cache
        if "content" in cache:
            return cache["content"]
        body = self._field("content", _host.BODY)
        # Whoever reads the body reads the response: keep the rest and free
        # the engine's buffer now rather than at the end of the iteration.
        self.url
        self.headers
        self.timings
        self.proto
        self.tls_version
        self.redirects
        self._release()
        return body

    @property
    def text(self):
        content = self.content
        if content is None:
            raise ValueError("the body of %s was discarded (discard_body=True)" % self._what)
        return content.decode("utf-8")

    def json(self):
        return _json.loads(self.text)

    @property
    def ok(self):
        return 200 <= self.status < 400

    def __repr__(self):
        return "<Response %s: %s>" % (self._what, self.status)


class Request:
    """A request to send later, e.g. in `batch`. `timeout` is in seconds;
    `keep_body` keeps the body even when the run discards bodies;
    `max_redirects` 0 returns the 3xx; `expected_statuses` are ints and
    `(min, max)` ranges (None keeps the run's 200-399); `max_body_size`
    is the largest body kept, in bytes (past it: error code 1060, or 1702
    once decoded)."""

    def __init__(self, method, url, data=None, json=None, headers=None, tags=None, name=None,
                 timeout=None, discard_body=False, keep_body=False, max_redirects=None,
                 expected_statuses=None, max_body_size=None):
        self.method = method
        self.url = url
        self.data = data
        self.json = json
        self.headers = headers
        self.tags = tags
        self.name = name
        self.timeout = timeout
        self.discard_body = discard_body
        self.keep_body = keep_body
        self.max_redirects = max_redirects
        self.expected_statuses = expected_statuses
        self.max_body_size = max_body_size

    def _what(self):
        return self.method.upper() + " " + self.url

    def _wire(self):
        """The 11-tuple src/host.rs reads: the request and its options,
        each option None that the test left to the run."""
        headers = _host.fields(self.headers)
        body = None
        if self.json is not None:
            body = _json.dumps(self.json)
            if not any(k.lower() == "content-type" for k, _ in headers):
                headers.append(("content-type", "application/json"))
        elif self.data is not None:
            body = self.data if isinstance(self.data, (str, bytes, bytearray)) else bytes(self.data)
        timeout = self.timeout
        if timeout is not None:
            if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout >= 0:
                raise ValueError("timeout must be a number of seconds >= 0, not %r" % (timeout,))
            timeout = timeout * 1e9
        size = self.max_body_size
        if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 0):
            raise ValueError("max_body_size must be a whole number of bytes >= 0, not %r" % (size,))
        expected = None
        if self.expected_statuses is not None:
            expected = [(s, s) if isinstance(s, int) else tuple(s) for s in self.expected_statuses]
        mode = 1 if self.discard_body else 0 if self.keep_body else None
        return (self.method.upper(), self.url, headers, body, _host.fields(self.tags), self.name,
                timeout, self.max_redirects, expected, mode, size)


def request(method, url, **kwargs):
    """Send one request. Keyword arguments are those of `Request`."""
    spec = Request(method, url, **kwargs)
    return Response(_call(_host.SEND, spec._wire()), spec._what(), spec.discard_body)


def get(url, **kwargs):
    return request("GET", url, **kwargs)


def post(url, **kwargs):
    return request("POST", url, **kwargs)


def put(url, **kwargs):
    return request("PUT", url, **kwargs)


def patch(url, **kwargs):
    return request("PATCH", url, **kwargs)


def delete(url, **kwargs):
    return request("DELETE", url, **kwargs)


def head(url, **kwargs):
    return request("HEAD", url, **kwargs)


def batch(requests):
    """Send `requests` in parallel; responses come back in the same order."""
    specs = list(requests)
    sent = _call(_host.BATCH, [s._wire() for s in specs])
    return [Response(r, s._what(), s.discard_body) for r, s in zip(sent, specs)]


def cookies(url):
    """The cookies of this VU's jar that a request to `url` would send."""
    return dict(_call(_host.COOKIES, url))


def set_cookie(url, cookie):
    """Put a cookie in the jar as if `url` had sent `set-cookie: <cookie>`
    (e.g. `"session=abc; Path=/"`); ValueError when it cannot be parsed."""
    _call(_host.SET_COOKIE, url, cookie)


def clear_cookies():
    """Empty this VU's cookie jar."""
    _call(_host.CLEAR_COOKIES)
