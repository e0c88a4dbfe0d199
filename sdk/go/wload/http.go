// HTTP through the engine's instrumented client: a request builder,
// Get/Post/Batch, and responses read at once whose engine handle is
// dropped before they are returned.

package wload

import (
	"runtime"
	"time"
	"unsafe"
)

// Timings says where the time of one request went.
type Timings struct {
	Blocked, Connecting, TLSHandshaking, Sending, Waiting, Receiving, Duration time.Duration
}

// Response is a response, copied out of the engine.
type Response struct {
	Status int
	URL    string
	// Error is the network error or timeout; "" when a response arrived.
	Error string
	// ErrorCode is k6's error code, 0 when none.
	ErrorCode uint32
	// BodyLength is the bytes received, known even when the body was discarded.
	BodyLength uint64
	Body       []byte
	Headers    [][2]string
	Timings    Timings
}

// Text is the body as a string.
func (r *Response) Text() string { return string(r.Body) }

// Header is the first header named name (names are lower case).
func (r *Response) Header(name string) (string, bool) {
	for _, h := range r.Headers {
		if h[0] == name {
			return h[1], true
		}
	}
	return "", false
}

func readResponse(h uint32, discard bool) *Response {
	r := &Response{Status: int(witStatus(h)), ErrorCode: witErrorCode(h), BodyLength: witBodyLen(h)}
	witURL(h, retPtr())
	r.URL = liftString(retPtr(), 0)
	witError(h, retPtr())
	r.Error, _ = liftOptionString(retPtr())
	witTimings(h, retPtr())
	ns := func(i uintptr) time.Duration { return time.Duration(u64At(retPtr(), i*8)) }
	r.Timings = Timings{ns(0), ns(1), ns(2), ns(3), ns(4), ns(5), ns(6)}
	witHeaders(h, retPtr())
	r.Headers = liftFields(retPtr())
	if !discard {
		witBody(h, retPtr())
		ptr, n := u32At(retPtr(), 0), u32At(retPtr(), 4)
		r.Body = make([]byte, n)
		copy(r.Body, unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n))
	}
	released()
	witDrop(h)
	return r
}

// Request is a request being built: wload.Get(url).Header("accept", "text/html").Send().
type Request struct {
	Method, URL string
	Headers     [][2]string
	Tags        [][2]string
	Body        []byte
	// Name groups dynamic URLs under one `name` tag; "" for the URL.
	Name    string
	Timeout time.Duration
	Discard bool
}

// NewRequest starts a request with any method.
func NewRequest(method, url string) *Request { return &Request{Method: method, URL: url} }

// Get starts a GET request.
func Get(url string) *Request { return NewRequest("GET", url) }

// Post starts a POST request.
func Post(url string) *Request { return NewRequest("POST", url) }

func (r *Request) Header(name, value string) *Request {
	r.Headers = append(r.Headers, [2]string{name, value})
	return r
}

func (r *Request) Tag(key, value string) *Request {
	r.Tags = append(r.Tags, [2]string{key, value})
	return r
}

func (r *Request) WithBody(body []byte) *Request { r.Body = body; return r }

// JSON sets an already serialised JSON body and its content type.
func (r *Request) JSON(body string) *Request {
	return r.Header("content-type", "application/json").WithBody([]byte(body))
}

func (r *Request) WithName(name string) *Request { r.Name = name; return r }

func (r *Request) WithTimeout(d time.Duration) *Request { r.Timeout = d; return r }

// DiscardBody counts the response body without keeping it.
func (r *Request) DiscardBody() *Request { r.Discard = true; return r }

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
}

// Send sends the request and waits for the whole response.
func (r *Request) Send() *Response {
	var w witRequest
	r.lower(&w)
	h := witSend(unsafe.Pointer(&w))
	runtime.KeepAlive(r)
	return readResponse(h, r.Discard)
}

// Batch sends requests in parallel; responses come back in the same order.
func Batch(reqs ...*Request) []*Response {
	ws := make([]witRequest, len(reqs))
	for i, r := range reqs {
		r.lower(&ws[i])
	}
	witBatch(unsafe.Pointer(unsafe.SliceData(ws)), uint32(len(ws)), retPtr())
	runtime.KeepAlive(reqs)
	handles, n := u32At(retPtr(), 0), u32At(retPtr(), 4)
	ids := make([]uint32, n)
	copy(ids, unsafe.Slice((*uint32)(unsafe.Pointer(uintptr(handles))), n))
	released()
	out := make([]*Response, n)
	for i, h := range ids {
		out[i] = readResponse(h, reqs[i].Discard)
	}
	return out
}
