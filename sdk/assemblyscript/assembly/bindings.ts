// The imports of the world `wload:test/test@0.2.0` (wit/test-0.2), declared
// with their core (canonical ABI) signatures. Parameters that flatten to
// more than 16 values (`send`'s request and options: 25) go by pointer to
// a tuple of them; results that are not one scalar are written at a
// return pointer passed last.

// wload:test/http
/** `send(tuple<request, request-options> at params, sent at ret)`: 112 and 40 bytes, 8-aligned. */
@external("wload:test/http@0.2.0", "send")
export declare function send(params: usize, ret: usize): void;
/** `batch(list<tuple<request, request-options>>) -> list<sent>`: the list's (ptr, len) at ret. */
@external("wload:test/http@0.2.0", "batch")
export declare function batch(reqs: usize, len: i32, ret: usize): void;
@external("wload:test/http@0.2.0", "cookies")
export declare function cookies(url: usize, urlLen: i32, ret: usize): void;
@external("wload:test/http@0.2.0", "set-cookie")
export declare function setCookie(url: usize, urlLen: i32, cookie: usize, cookieLen: i32, ret: usize): void;
@external("wload:test/http@0.2.0", "clear-cookies")
export declare function clearCookies(): void;
@external("wload:test/http@0.2.0", "[method]response.header")
export declare function responseHeader(self: i32, name: usize, nameLen: i32, ret: usize): void;
@external("wload:test/http@0.2.0", "[method]response.proto")
export declare function responseProto(self: i32, ret: usize): void;
@external("wload:test/http@0.2.0", "[method]response.tls-version")
export declare function responseTlsVersion(self: i32, ret: usize): void;
@external("wload:test/http@0.2.0", "[method]response.redirects")
export declare function responseRedirects(self: i32): i32;
@external("wload:test/http@0.2.0", "[method]response.headers")
export declare function responseHeaders(self: i32, ret: usize): void;
@external("wload:test/http@0.2.0", "[method]response.timings")
export declare function responseTimings(self: i32, ret: usize): void;
@external("wload:test/http@0.2.0", "[method]response.body")
export declare function responseBody(self: i32, ret: usize): void;
@external("wload:test/http@0.2.0", "[method]response.url")
export declare function responseUrl(self: i32, ret: usize): void;
@external("wload:test/http@0.2.0", "[resource-drop]response")
export declare function responseDrop(self: i32): void;

// wload:test/checks
@external("wload:test/checks@0.2.0", "check")
export declare function check(name: usize, nameLen: i32, ok: i32, tags: usize, tagsLen: i32): i32;

// wload:test/metrics
@external("wload:test/metrics@0.2.0", "define")
export declare function define(name: usize, nameLen: i32, kind: i32, isTime: i32, ret: usize): void;
@external("wload:test/metrics@0.2.0", "add")
export declare function add(id: i32, value: f64, tags: usize, tagsLen: i32): void;

// wload:test/vu
@external("wload:test/vu@0.2.0", "id")
export declare function vuId(): i32;
@external("wload:test/vu@0.2.0", "iteration")
export declare function vuIteration(): i64;
@external("wload:test/vu@0.2.0", "scenario")
export declare function vuScenario(ret: usize): void;
@external("wload:test/vu@0.2.0", "sleep")
export declare function vuSleep(ns: i64): void;
@external("wload:test/vu@0.2.0", "env")
export declare function vuEnv(key: usize, keyLen: i32, ret: usize): void;
@external("wload:test/vu@0.2.0", "setup-data")
export declare function vuSetupData(ret: usize): void;
@external("wload:test/vu@0.2.0", "log")
export declare function vuLog(level: i32, msg: usize, msgLen: i32): void;
@external("wload:test/vu@0.2.0", "report-panic")
export declare function vuReportPanic(msg: usize, msgLen: i32): void;
@external("wload:test/vu@0.2.0", "group-enter")
export declare function vuGroupEnter(name: usize, nameLen: i32): void;
@external("wload:test/vu@0.2.0", "group-exit")
export declare function vuGroupExit(): void;
