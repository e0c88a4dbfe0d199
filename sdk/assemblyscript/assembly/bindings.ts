// The imports of the world `wload:test@0.1.0`, declared with their core
// (canonical ABI) signatures. Records too large to pass flat (`request`,
// 17 flat values) go by pointer; results that are not one scalar are
// written at a return pointer.

// wload:test/http
@external("wload:test/http@0.1.0", "send")
export declare function send(req: usize): i32;
@external("wload:test/http@0.1.0", "batch")
export declare function batch(reqs: usize, len: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "send-with")
export declare function sendWith(reqAndOptions: usize): i32;
@external("wload:test/http@0.1.0", "send-with-limits")
export declare function sendWithLimits(reqOptionsAndLimits: usize): i32;
@external("wload:test/http@0.1.0", "batch-with")
export declare function batchWith(reqs: usize, len: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "batch-with-limits")
export declare function batchWithLimits(reqs: usize, len: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "cookies")
export declare function cookies(url: usize, urlLen: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "set-cookie")
export declare function setCookie(url: usize, urlLen: i32, cookie: usize, cookieLen: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "clear-cookies")
export declare function clearCookies(): void;
@external("wload:test/http@0.1.0", "[method]response.header")
export declare function responseHeader(self: i32, name: usize, nameLen: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "[method]response.proto")
export declare function responseProto(self: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "[method]response.tls-version")
export declare function responseTlsVersion(self: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "[method]response.redirects")
export declare function responseRedirects(self: i32): i32;
@external("wload:test/http@0.1.0", "[method]response.status")
export declare function responseStatus(self: i32): i32;
@external("wload:test/http@0.1.0", "[method]response.headers")
export declare function responseHeaders(self: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "[method]response.timings")
export declare function responseTimings(self: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "[method]response.error")
export declare function responseError(self: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "[method]response.error-code")
export declare function responseErrorCode(self: i32): i32;
@external("wload:test/http@0.1.0", "[method]response.body-len")
export declare function responseBodyLen(self: i32): i64;
@external("wload:test/http@0.1.0", "[method]response.body")
export declare function responseBody(self: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "[method]response.url")
export declare function responseUrl(self: i32, ret: usize): void;
@external("wload:test/http@0.1.0", "[resource-drop]response")
export declare function responseDrop(self: i32): void;

// wload:test/checks
@external("wload:test/checks@0.1.0", "check")
export declare function check(name: usize, nameLen: i32, ok: i32, tags: usize, tagsLen: i32): i32;

// wload:test/metrics
@external("wload:test/metrics@0.1.0", "define")
export declare function define(name: usize, nameLen: i32, kind: i32, isTime: i32, ret: usize): void;
@external("wload:test/metrics@0.1.0", "add")
export declare function add(id: i32, value: f64, tags: usize, tagsLen: i32): void;

// wload:test/vu
@external("wload:test/vu@0.1.0", "id")
export declare function vuId(): i32;
@external("wload:test/vu@0.1.0", "iteration")
export declare function vuIteration(): i64;
@external("wload:test/vu@0.1.0", "scenario")
export declare function vuScenario(ret: usize): void;
@external("wload:test/vu@0.1.0", "sleep")
export declare function vuSleep(ns: i64): void;
@external("wload:test/vu@0.1.0", "env")
export declare function vuEnv(key: usize, keyLen: i32, ret: usize): void;
@external("wload:test/vu@0.1.0", "setup-data")
export declare function vuSetupData(ret: usize): void;
@external("wload:test/vu@0.1.0", "log")
export declare function vuLog(level: i32, msg: usize, msgLen: i32): void;
@external("wload:test/vu@0.1.0", "report-panic")
export declare function vuReportPanic(msg: usize, msgLen: i32): void;
@external("wload:test/vu@0.1.0", "group-enter")
export declare function vuGroupEnter(name: usize, nameLen: i32): void;
@external("wload:test/vu@0.1.0", "group-exit")
export declare function vuGroupExit(): void;
