// HTTP through the engine's instrumented client: a request builder,
// Get/Post/Batch, per-request options, the VU's cookie jar, and responses
// whose body stays in the engine until it is read. Requests go out
// through send and batch of wload:test/http@0.2.0, lowered by hand in the
// canonical ABI (the layouts below are wit-parser's, checked by size).

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

// Response is the engine's response. Its status, error and body length
// came with the answer; the other methods ask the engine, and the body is
// copied into the test only by Body, Text or JSON. A response lasts until
// the iteration (or setup, teardown) that sent it returns; Close releases
// it before then. Using it afterwards panics.
type Response struct {
	h       uint32
	live    bool
	status  uint16
	failed  bool
	kind    ErrorKind
	message string
	bodyLen uint64
}

// open are the responses of the running export call, released when it
// returns (Go has no destructors to do it when a response is dropped).
var open []*Response

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
func (r *Response) Status() int { r.handle(); return int(r.status) }

// Error is the network error or timeout; "" when a response arrived.
func (r *Response) Error() string { r.handle(); return r.message }

// ErrorKind is what kind of failure Error was; false when none.
func (r *Response) ErrorKind() (ErrorKind, bool) { r.handle(); return r.kind, r.failed }

// ErrorCode is k6's error code: the failure's (ErrorKind.Code), else
// 1000 + status for a 4xx/5xx response, else 0.
func (r *Response) ErrorCode() uint32 {
	r.handle()
	switch {
	case r.failed:
		return r.kind.Code()
	case r.status >= 400:
		return 1000 + uint32(r.status)
	}
	return 0
}

// BodyLen is the bytes of the body, known even when it was discarded.
func (r *Response) BodyLen() uint64 { r.handle(); return r.bodyLen }

// Body copies the body into the test (empty when discarded), once: the
// engine writes it straight into the returned slice.
func (r *Response) Body() []byte {
	h := r.handle()
	buf := reserve(r.bodyLen)
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

// witRequest is `request` in the canonical ABI: 56 bytes, 4-aligned.
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
}

// witOptions is `request-options`: 56 bytes, 8-aligned. A tag of 0 is
// `none`, the run's setting.
type witOptions struct {
	timeoutTag            uint8
	_                     [7]byte
	timeout               uint64
	redirectsTag          uint8
	_                     [3]byte
	redirects             uint32
	statusesTag           uint8
	_                     [3]byte
	statuses, statusesLen uint32
	bodyModeTag, bodyMode uint8
	_                     [2]byte
	maxBodyTag            uint8
	_                     [7]byte
	maxBody               uint64
}

// witPair is tuple<request, request-options>, what send takes and each
// element of batch's list: 112 bytes, 8-aligned.
type witPair struct {
	req  witRequest
	opts witOptions
}

// witSent is `sent`: status u16 at 0, option<http-error> at 4 (its
// error-kind at 8, message at 12), body-len at 24, the response handle at
// 32; 40 bytes, 8-aligned.
type witSent struct {
	status          uint16
	_               [2]byte
	errorTag        uint8
	lost            uint8 // padding in the ABI; set here when the message was lost (spill.go)
	_               [2]byte
	kind            uint8
	_               [3]byte
	message, msgLen uint32
	_               [4]byte
	bodyLen         uint64
	handle          uint32
	_               [4]byte
}

// The layouts above, held to the canonical ABI's sizes at compile time.
var (
	_ [unsafe.Sizeof(witRequest{}) - 56]byte
	_ [56 - unsafe.Sizeof(witRequest{})]byte
	_ [unsafe.Sizeof(witOptions{}) - 56]byte
	_ [56 - unsafe.Sizeof(witOptions{})]byte
	_ [unsafe.Sizeof(witPair{}) - 112]byte
	_ [112 - unsafe.Sizeof(witPair{})]byte
	_ [unsafe.Sizeof(witSent{}) - 40]byte
	_ [40 - unsafe.Sizeof(witSent{})]byte
	_ [unsafe.Offsetof(witPair{}.opts) - 56]byte
	_ [56 - unsafe.Offsetof(witPair{}.opts)]byte
	_ [unsafe.Offsetof(witSent{}.bodyLen) - 24]byte
	_ [24 - unsafe.Offsetof(witSent{}.bodyLen)]byte
)

func ptr32(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }

func (r *Request) lower(p *witPair) {
	m, ml := strPtr(r.Method)
	u, ul := strPtr(r.URL)
	h, hl := lowerFields(r.Headers)
	t, tl := lowerFields(r.Tags)
	*p = witPair{}
	w := &p.req
	*w = witRequest{method: ptr32(m), methodLen: ml, url: ptr32(u), urlLen: ul,
		headers: ptr32(h), headersLen: hl, tags: ptr32(t), tagsLen: tl}
	if r.Body != nil {
		w.bodyTag, w.body, w.bodyLen = 1, ptr32(unsafe.Pointer(unsafe.SliceData(r.Body))), uint32(len(r.Body))
	}
	if r.Name != "" {
		n, nl := strPtr(r.Name)
		w.nameTag, w.name, w.nameLen = 1, ptr32(n), nl
	}
	// The lowered headers and tags are referenced only by address.
	keepLowered = append(keepLowered, h, t)

	o := &p.opts
	if r.Timeout > 0 {
		o.timeoutTag, o.timeout = 1, uint64(r.Timeout)
	}
	if r.redirects != nil {
		o.redirectsTag, o.redirects = 1, *r.redirects
	}
	if r.hasStatuses {
		o.statusesTag, o.statusesLen = 1, uint32(len(r.statuses))
		if len(r.statuses) > 0 {
			o.statuses = ptr32(unsafe.Pointer(unsafe.SliceData(r.statuses)))
		}
	}
	// body-mode: keep = 0, discard = 1.
	switch {
	case r.Discard:
		o.bodyModeTag, o.bodyMode = 1, 1
	case r.keep:
		o.bodyModeTag, o.bodyMode = 1, 0
	}
	if r.maxBody != nil {
		o.maxBodyTag, o.maxBody = 1, *r.maxBody
	}
}

// keepLowered holds lowered field lists until the call that uses them returns.
var keepLowered []unsafe.Pointer

func loweredDone() {
	clear(keepLowered)
	keepLowered = keepLowered[:0]
}

// markLost flags the sent records among sents whose error message the
// engine wrote to the spill area, and zeroes that area: Go may allocate
// again once it returns (spill.go). Their message is then told in a few
// words by lift. With TinyGo nothing is ever lost.
func markLost(sents []witSent) {
	if !spilled {
		return
	}
	for i := range sents {
		if s := &sents[i]; s.errorTag != 0 && inSpill(s.message, s.msgLen) {
			s.lost = 1
		}
	}
	unspill()
}

// lift makes the Response of a sent record, copying its error message.
func (s *witSent) lift() *Response {
	r := &Response{h: s.handle, live: true, status: s.status, bodyLen: s.bodyLen}
	if s.errorTag != 0 {
		r.failed, r.kind = true, ErrorKind(s.kind)
		switch {
		case s.lost != 0:
			r.message = r.kind.String() + ": the engine's message of " + itoa(s.msgLen) +
				" bytes did not fit in the test's memory"
		case s.msgLen > 0:
			r.message = string(unsafe.Slice((*byte)(unsafe.Pointer(uintptr(s.message))), s.msgLen))
		}
	}
	open = append(open, r)
	return r
}

// itoa is strconv.Itoa for a length, without the package.
func itoa(n uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// Send sends the request and waits for the whole response.
func (r *Request) Send() *Response {
	var p witPair
	r.lower(&p)
	// The answer goes to the static return area: the engine writes it
	// after calling cabi_realloc, which runs Go code that may move a
	// goroutine's stack.
	witSend(unsafe.Pointer(&p), retPtr())
	runtime.KeepAlive(&p)
	runtime.KeepAlive(r)
	loweredDone()
	sent := (*witSent)(retPtr())
	markLost(unsafe.Slice(sent, 1))
	resp := sent.lift()
	released()
	return resp
}

// Batch sends requests in parallel; responses come back in the same
// order. The run's --batch and --batch-per-host bound how many are in
// flight.
func Batch(reqs ...*Request) []*Response {
	if len(reqs) == 0 {
		return []*Response{}
	}
	ps := make([]witPair, len(reqs))
	for i, r := range reqs {
		r.lower(&ps[i])
	}
	// The answers, 40 bytes each (8-aligned), in a buffer of their own: a
	// batch is not sent again as fetch would. Their error messages go to
	// the scratch buffer.
	buf := reserve(40*uint64(len(reqs)) + 8)
	witBatch(unsafe.Pointer(unsafe.SliceData(ps)), uint32(len(ps)), retPtr())
	runtime.KeepAlive(ps)
	runtime.KeepAlive(reqs)
	loweredDone()
	list, n := u32At(retPtr(), 0), u32At(retPtr(), 4)
	sents := unsafe.Slice((*witSent)(unsafe.Pointer(uintptr(list))), n)
	markLost(sents)
	out := make([]*Response, n)
	for i := range sents {
		out[i] = sents[i].lift()
	}
	runtime.KeepAlive(buf)
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
