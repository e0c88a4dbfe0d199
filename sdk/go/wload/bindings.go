// The imports of the world wload:test@0.2.0 with their core (canonical
// ABI) signatures, for Go ≥ 1.24 and TinyGo (both know go:wasmimport).
// Parameters too many to pass flat (more than 16 values: a request alone
// is 17) go by pointer to a tuple of them; results that are not one
// scalar are written at a return pointer. Only the functions a test
// calls end up imported.

package wload

import "unsafe"

// send(tuple<request, request-options> at params) -> sent at ret:
// 112 and 40 bytes, both 8-aligned.
//
//go:wasmimport wload:test/http@0.2.0 send
func witSend(params unsafe.Pointer, ret unsafe.Pointer)

// batch(list<tuple<request, request-options>>) -> list<sent>: the list's
// (ptr, len) at ret.
//
//go:wasmimport wload:test/http@0.2.0 batch
func witBatch(reqs unsafe.Pointer, n uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/http@0.2.0 cookies
func witCookies(url unsafe.Pointer, urlLen uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/http@0.2.0 set-cookie
func witSetCookie(url unsafe.Pointer, urlLen uint32, cookie unsafe.Pointer, cookieLen uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/http@0.2.0 clear-cookies
func witClearCookies()

//go:wasmimport wload:test/http@0.2.0 [method]response.header
func witHeader(h uint32, name unsafe.Pointer, nameLen uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/http@0.2.0 [method]response.text
func witText(h uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/http@0.2.0 [method]response.proto
func witProto(h uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/http@0.2.0 [method]response.tls-version
func witTLSVersion(h uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/http@0.2.0 [method]response.redirects
func witRedirects(h uint32) uint32

//go:wasmimport wload:test/http@0.2.0 [method]response.headers
func witHeaders(h uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/http@0.2.0 [method]response.timings
func witTimings(h uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/http@0.2.0 [method]response.body
func witBody(h uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/http@0.2.0 [method]response.url
func witURL(h uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/http@0.2.0 [resource-drop]response
func witDrop(h uint32)

//go:wasmimport wload:test/checks@0.2.0 check
func witCheck(name unsafe.Pointer, nameLen uint32, ok uint32, tags unsafe.Pointer, tagsLen uint32) uint32

//go:wasmimport wload:test/metrics@0.2.0 define
func witDefine(name unsafe.Pointer, nameLen uint32, kind uint32, isTime uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/metrics@0.2.0 add
func witAdd(id uint32, value float64, tags unsafe.Pointer, tagsLen uint32)

//go:wasmimport wload:test/vu@0.2.0 id
func witVuID() uint32

//go:wasmimport wload:test/vu@0.2.0 iteration
func witVuIteration() uint64

//go:wasmimport wload:test/vu@0.2.0 scenario
func witVuScenario(ret unsafe.Pointer)

//go:wasmimport wload:test/vu@0.2.0 sleep
func witVuSleep(ns uint64)

//go:wasmimport wload:test/vu@0.2.0 env
func witVuEnv(key unsafe.Pointer, keyLen uint32, ret unsafe.Pointer)

//go:wasmimport wload:test/vu@0.2.0 setup-data
func witVuSetupData(ret unsafe.Pointer)

//go:wasmimport wload:test/vu@0.2.0 log
func witVuLog(level uint32, msg unsafe.Pointer, msgLen uint32)

//go:wasmimport wload:test/vu@0.2.0 report-panic
func witVuReportPanic(msg unsafe.Pointer, msgLen uint32)

//go:wasmimport wload:test/vu@0.2.0 group-enter
func witVuGroupEnter(name unsafe.Pointer, nameLen uint32)

//go:wasmimport wload:test/vu@0.2.0 group-exit
func witVuGroupExit()
