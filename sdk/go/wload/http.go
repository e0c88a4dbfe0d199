// HTTP through the engine's instrumented client: a request builder,
// Get/Post/Batch, per-request options and limits, the VU's cookie jar,
// and responses whose body stays in the engine until it is read.

package wload

import (
	"encoding/json"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Timings says where the time of one request went.
type Timings struct {
	Blocked, Connecting, TLSHandshaking, Sending, Waiting, Receiving, Duration time.Duration
}

// Response is the engine's response: each method asks the engine, and
// the body is copied into the test only by Body, Text or JSON. A response
// lasts until the iteration (or setup, teardown) that sent it returns;
// Close releases it before then. Using it afterwards panics.
type Response struct {
	h    uint32
	live bool
}

// open are the responses of the running export call, released when it
// returns (Go has no destructors to do it when a response is dropped).
var open []*Response

func newResponse(h uint32) *Response {
	r := &Response{h: h, live: true}
	open = append(open, r)
	return r
}

func (r *Response) handle() uint32 {
	if !r.live {
		panic("wload: a Response was used after Close or after the iteration that sent it")
	}
	return r.h
}

// Close returns the response's body buffer to the engine. Optional: what
// is still open is closed when the iteration returns.
func (r *Response) Close() {
	if r.live {
		r.live = false
		witDrop(r.h)
	}
}

// closeResponses closes what the export call left open.
func closeResponses() {
	for _, r := range open {
		r.Close()
	}
	clear(open)
	open = open[:0]
}

// Status is the HTTP status, 0 when no response arrived (see Error).
func (r *Response) Status() int { return int(witStatus(r.handle())) }

// Error is the network error or timeout; "" when a response arrived.
func (r *Response) Error() string {
	h := r.handle()
	fetch(func() { witError(h, retPtr()) })
	s, _ := liftOptionString(retPtr())
	released()
	return s
}

// ErrorCode is k6's error code, 0 when none.
func (r *Response) ErrorCode() uint32 { return witErrorCode(r.handle()) }

// BodyLen is the bytes of the body, known even when it was discarded.
func (r *Response) BodyLen() uint64 { return witBodyLen(r.handle()) }

// Body copies the body into the test (empty when discarded), once: the
// engine writes it straight into the returned slice.
func (r *Response) Body() []byte {
	h := r.handle()
	buf := reserve(witBodyLen(h))
	witBody(h, retPtr())
	ptr, n := u32At(retPtr(), 0), u32At(retPtr(), 4)
	var b []byte
	switch {
	case n == 0:
		b = []byte{}
	case len(buf) == int(n) && uintptr(ptr) == uintptr(unsafe.Pointer(unsafe.SliceData(buf))):
		b = buf
	default:
		b = append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n)...)
	}
	released()
	return b
}

// Text is the body as text; invalid UTF-8 becomes U+FFFD (as the
// engine's `text` replaces it).
func (r *Response) Text() string {
	b := r.Body()
	if utf8.Valid(b) {
		return unsafe.String(unsafe.SliceData(b), len(b))
	}
	h := r.handle()
	// Each invalid byte may become the 3 bytes of U+FFFD.
	reserve(3 * uint64(len(b)))
	witText(h, retPtr())
	s := liftString(retPtr(), 0)
	released()
	return s
}

// JSON decodes the body into v, as json.Unmarshal.
func (r *Response) JSON(v any) error { return json.Unmarshal(r.Body(), v) }

// Header is the first header named name (case-insensitive).
func (r *Response) Header(name string) (string, bool) {
	h := r.handle()
	n, nl := strPtr(name)
	fetch(func() { witHeader(h, n, nl, retPtr()) })
	runtime.KeepAlive(name)
	v, ok := liftOptionString(retPtr())
	released()
	return v, ok
}

// Headers are all headers in the order received, names in lower case;
// repeated fields (set-cookie) stay apart.
func (r *Response) Headers() [][2]string {
	handle := r.handle()
	fetch(func() { witHeaders(handle, retPtr()) })
	h := liftFields(retPtr())
	released()
	return h
}

// Timings is where the time of this request went.
func (r *Response) Timings() Timings {
	witTimings(r.handle(), retPtr())
	ns := func(i uintptr) time.Duration { return time.Duration(u64At(retPtr(), i*8)) }
	return Timings{ns(0), ns(1), ns(2), ns(3), ns(4), ns(5), ns(6)}
}

// URL is the URL of this response: after redirects, the last one.
func (r *Response) URL() string {
	h := r.handle()
	fetch(func() { witURL(h, retPtr()) })
	s := liftString(retPtr(), 0)
	released()
	return s
}

// Proto is HTTP/1.1 or HTTP/2.0; "" when no connection was made.
func (r *Response) Proto() string {
	h := r.handle()
	fetch(func() { witProto(h, retPtr()) })
	s := liftString(retPtr(), 0)
	released()
	return s
}

// TLSVersion is tls1.2 or tls1.3 over https, "" otherwise.
func (r *Response) TLSVersion() string {
	h := r.handle()
	fetch(func() { witTLSVersion(h, retPtr()) })
	s := liftString(retPtr(), 0)
	released()
	return s
}

// Redirects is how many redirects were followed to get this response.
func (r *Response) Redirects() uint32 { return witRedirects(r.handle()) }

// StatusRange is an inclusive range of statuses: {200, 299}.
type StatusRange struct{ Min, Max uint16 }

// Request is a request being built: wload.Get(url).Header("accept", "text/html").Send().
type Request struct {
	Method, URL string
	Headers     [][2]string
	Tags        [][2]string
	Body        []byte
	// Name groups dynamic URLs under one `name` tag; "" for the URL.
	Name    string
	Timeout time.Duration
	// Discard counts the response body without keeping it.
	Discard bool

	keep        bool
	redirects   *uint32
	statuses    []StatusRange
	hasStatuses bool
	maxBody     *uint64
}

// NewRequest starts a request with any method.
func NewRequest(method, url string) *Request { return &Request{Method: method, URL: url} }

// Get starts a GET request.
func Get(url string) *Request { return NewRequest("GET", url) }

// Post starts a POST request.
func Post(url string) *Request { return NewRequest("POST", url) }

// Put starts a PUT request.
func Put(url string) *Request { return NewRequest("PUT", url) }

// Patch starts a PATCH request.
func Patch(url string) *Request { return NewRequest("PATCH", url) }

// Delete starts a DELETE request.
func Delete(url string) *Request { return NewRequest("DELETE", url) }

// Head starts a HEAD request.
func Head(url string) *Request { return NewRequest("HEAD", url) }

// Header adds a request header; repeated names are sent repeated.
func (r *Request) Header(name, value string) *Request {
	r.Headers = append(r.Headers, [2]string{name, value})
	return r
}

// Tag adds a tag to every metric this request records.
func (r *Request) Tag(key, value string) *Request {
	r.Tags = append(r.Tags, [2]string{key, value})
	return r
}

// Query appends key=value to the URL's query, percent-encoded.
func (r *Request) Query(key, value string) *Request {
	sep := "?"
	if strings.Contains(r.URL, "?") {
		sep = "&"
	}
	r.URL += sep + EncodeComponent(key) + "=" + EncodeComponent(value)
	return r
}

// WithBody sets the request body.
func (r *Request) WithBody(body []byte) *Request { r.Body = body; return r }

// JSON sets an already serialised JSON body and its content type.
func (r *Request) JSON(body string) *Request {
	return r.Header("content-type", "application/json").WithBody([]byte(body))
}

// Form sets an application/x-www-form-urlencoded body of (name, value)
// pairs and its content type.
func (r *Request) Form(fields [][2]string) *Request {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(formEncode(f[0]) + "=" + formEncode(f[1]))
	}
	return r.Header("content-type", "application/x-www-form-urlencoded").WithBody([]byte(b.String()))
}

// WithName sets the `name` tag, which groups URLs that differ only in ids.
func (r *Request) WithName(name string) *Request { r.Name = name; return r }

// WithTimeout gives up after d (default 60 s): status 0, error code 1050.
func (r *Request) WithTimeout(d time.Duration) *Request { r.Timeout = d; return r }

// DiscardBody counts the response body without keeping it.
func (r *Request) DiscardBody() *Request { r.Discard, r.keep = true, false; return r }

// KeepBody keeps the response body even when the run discards bodies
// (--discard-response-bodies).
func (r *Request) KeepBody() *Request { r.Discard, r.keep = false, true; return r }

// MaxRedirects follows at most n redirects (0: the 3xx response itself).
func (r *Request) MaxRedirects(n uint32) *Request { r.redirects = &n; return r }

// ExpectedStatuses are the statuses that count as expected in
// http_req_failed (the run's default is 200-399); none expects none.
func (r *Request) ExpectedStatuses(ranges ...StatusRange) *Request {
	r.statuses, r.hasStatuses = ranges, true
	return r
}

// MaxBodySize keeps at most n bytes of the response body, on the wire and
// once decoded (the run's default is 64 MiB). Past it the request fails
// with error code 1060 (1702 decoded).
func (r *Request) MaxBodySize(n uint64) *Request { r.maxBody = &n; return r }

func (r *Request) hasOptions() bool {
	return r.redirects != nil || r.hasStatuses || r.Discard || r.keep
}

func (r *Request) hasLimits() bool { return r.maxBody != nil }

// witRequest is `request` in the canonical ABI: 80 bytes, 8-aligned.
type witRequest struct {
	method, methodLen   uint32
	url, urlLen         uint32
	headers, headersLen uint32
	bodyTag             uint8
	_                   [3]byte
	body, bodyLen       uint32
	tags, tagsLen       uint32
	nameTag             uint8
	_                   [3]byte
	name, nameLen       uint32
	timeoutTag          uint8
	_                   [7]byte
	timeout             uint64
	bodyMode            uint8
	_                   [7]byte
}

// witOptions is `request-options`: 24 bytes, 4-aligned.
type witOptions struct {
	redirectsTag          uint8
	_                     [3]byte
	redirects             uint32
	statusesTag           uint8
	_                     [3]byte
	statuses, statusesLen uint32
	bodyModeTag, bodyMode uint8
	_                     [2]byte
}

// witLimits is `request-limits`: 16 bytes, 8-aligned.
type witLimits struct {
	maxBodyTag uint8
	_          [7]byte
	maxBody    uint64
}

// witWith is tuple<request, request-options>: 104 bytes.
type witWith struct {
	req  witRequest
	opts witOptions
}

// witWithLimits is tuple<request, request-options, request-limits>: 120 bytes.
type witWithLimits struct {
	req    witRequest
	opts   witOptions
	limits witLimits
}

func ptr32(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }

func (r *Request) lower(w *witRequest) {
	m, ml := strPtr(r.Method)
	u, ul := strPtr(r.URL)
	h, hl := lowerFields(r.Headers)
	t, tl := lowerFields(r.Tags)
	*w = witRequest{method: ptr32(m), methodLen: ml, url: ptr32(u), urlLen: ul,
		headers: ptr32(h), headersLen: hl, tags: ptr32(t), tagsLen: tl}
	if r.Body != nil {
		w.bodyTag, w.body, w.bodyLen = 1, ptr32(unsafe.Pointer(unsafe.SliceData(r.Body))), uint32(len(r.Body))
	}
	if r.Name != "" {
		n, nl := strPtr(r.Name)
		w.nameTag, w.name, w.nameLen = 1, ptr32(n), nl
	}
	if r.Timeout > 0 {
		w.timeoutTag, w.timeout = 1, uint64(r.Timeout)
	}
	if r.Discard {
		w.bodyMode = 1
	}
	// The lowered headers and tags are referenced only by address.
	keepLowered = append(keepLowered, h, t)
}

// keepLowered holds lowered field lists until the call that uses them returns.
var keepLowered []unsafe.Pointer

func loweredDone() {
	clear(keepLowered)
	keepLowered = keepLowered[:0]
}

func (r *Request) lowerOptions(o *witOptions) {
	*o = witOptions{}
	if r.redirects != nil {
		o.redirectsTag, o.redirects = 1, *r.redirects
	}
	if r.hasStatuses {
		o.statusesTag, o.statusesLen = 1, uint32(len(r.statuses))
		if len(r.statuses) > 0 {
			o.statuses = ptr32(unsafe.Pointer(unsafe.SliceData(r.statuses)))
		}
	}
	switch {
	case r.Discard:
		o.bodyModeTag, o.bodyMode = 1, 1
	case r.keep:
		o.bodyModeTag, o.bodyMode = 1, 0
	}
}

func (r *Request) lowerLimits(l *witLimits) {
	*l = witLimits{}
	if r.maxBody != nil {
		l.maxBodyTag, l.maxBody = 1, *r.maxBody
	}
}

// Send sends the request and waits for the whole response. It calls the
// plainest import that carries what was set, so a test imports only what
// it uses.
func (r *Request) Send() *Response {
	var h uint32
	switch {
	case r.hasLimits():
		var w witWithLimits
		r.lower(&w.req)
		r.lowerOptions(&w.opts)
		r.lowerLimits(&w.limits)
		h = witSendWithLimits(unsafe.Pointer(&w))
	case r.hasOptions():
		var w witWith
		r.lower(&w.req)
		r.lowerOptions(&w.opts)
		h = witSendWith(unsafe.Pointer(&w))
	default:
		var w witRequest
		r.lower(&w)
		h = witSend(unsafe.Pointer(&w))
	}
	runtime.KeepAlive(r)
	loweredDone()
	return newResponse(h)
}

// Batch sends requests in parallel; responses come back in the same
// order. The run's --batch and --batch-per-host bound how many are in
// flight.
func Batch(reqs ...*Request) []*Response {
	// The responses' handles: 4 bytes each, in a buffer of their own (a
	// batch is not sent again as fetch would).
	reserve(4 * uint64(len(reqs)))
	limits, options := false, false
	for _, r := range reqs {
		limits = limits || r.hasLimits()
		options = options || r.hasOptions()
	}
	switch {
	case limits:
		ws := make([]witWithLimits, len(reqs))
		for i, r := range reqs {
			r.lower(&ws[i].req)
			r.lowerOptions(&ws[i].opts)
			r.lowerLimits(&ws[i].limits)
		}
		witBatchWithLimits(unsafe.Pointer(unsafe.SliceData(ws)), uint32(len(ws)), retPtr())
		runtime.KeepAlive(ws)
	case options:
		ws := make([]witWith, len(reqs))
		for i, r := range reqs {
			r.lower(&ws[i].req)
			r.lowerOptions(&ws[i].opts)
		}
		witBatchWith(unsafe.Pointer(unsafe.SliceData(ws)), uint32(len(ws)), retPtr())
		runtime.KeepAlive(ws)
	default:
		ws := make([]witRequest, len(reqs))
		for i, r := range reqs {
			r.lower(&ws[i])
		}
		witBatch(unsafe.Pointer(unsafe.SliceData(ws)), uint32(len(ws)), retPtr())
		runtime.KeepAlive(ws)
	}
	runtime.KeepAlive(reqs)
	loweredDone()
	handles, n := u32At(retPtr(), 0), u32At(retPtr(), 4)
	out := make([]*Response, n)
	for i, h := range unsafe.Slice((*uint32)(unsafe.Pointer(uintptr(handles))), n) {
		out[i] = newResponse(h)
	}
	released()
	return out
}

// Cookies are the VU's cookies that a request to url would send, as
// (name, value). The jar is the VU's own and lasts the whole run.
func Cookies(url string) [][2]string {
	u, ul := strPtr(url)
	fetch(func() { witCookies(u, ul, retPtr()) })
	runtime.KeepAlive(url)
	c := liftFields(retPtr())
	released()
	return c
}

// Cookie is the value of the cookie name that a request to url would send.
func Cookie(url, name string) (string, bool) {
	for _, c := range Cookies(url) {
		if c[0] == name {
			return c[1], true
		}
	}
	return "", false
}

// SetCookie puts a cookie into the VU's jar as if url had answered with
// `set-cookie: <cookie>` ("session=abc; Path=/").
func SetCookie(url, cookie string) error {
	u, ul := strPtr(url)
	c, cl := strPtr(cookie)
	fetch(func() { witSetCookie(u, ul, c, cl, retPtr()) })
	runtime.KeepAlive(url)
	runtime.KeepAlive(cookie)
	var err error
	if u8At(retPtr(), 0) != 0 {
		err = hostError(liftString(retPtr(), 4))
	}
	released()
	return err
}

// ClearCookies empties the VU's cookie jar.
func ClearCookies() { witClearCookies() }

// hostError is an error the engine returned.
type hostError string

func (e hostError) Error() string { return string(e) }

// EncodeComponent percent-encodes s for a URL's path segment or query
// (everything but A-Z a-z 0-9 - _ . ~), as JavaScript's encodeURIComponent.
func EncodeComponent(s string) string { return encode(s, false) }

// formEncode is application/x-www-form-urlencoded: spaces become '+'.
func formEncode(s string) string { return encode(s, true) }

func encode(s string, form bool) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			b.WriteByte(c)
		case c == ' ' && form:
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
