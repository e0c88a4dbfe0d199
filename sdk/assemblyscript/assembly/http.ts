// HTTP through the engine's instrumented client: a request builder,
// `get`/`post`/`batch`, per-request options, the VU's cookie jar, and
// responses whose body stays in the engine until it is read. Each request
// goes out through `send`/`batch` of `wload:test/http@0.2.0`, lowered by
// hand in the canonical ABI (offsets below, as wit-parser lays them out).

import * as wit from "./bindings";
import { RET, FieldList, utf8, liftString, liftStringAt, liftOptionStringAt, liftBytesAt, liftFieldsAt, release } from "./abi";

/** `request`: 56 bytes, 4-aligned. */
const REQUEST_SIZE: usize = 56;
/** `tuple<request, request-options>`: the options (56 bytes, 8-aligned) at 56; 8-aligned. */
const PAIR_SIZE: usize = 112;
/** `sent`: status u16 @0, error option<http-error> @4 (tag; kind u8 @8, message @12), body-len u64 @24, response @32. */
const SENT_SIZE: usize = 40;

/**
 * Why a request failed (`error-kind` of the WIT, in its order): each kind
 * is one of k6's error classes, whose code `errorCode` gives.
 */
export enum ErrorKind {
  Generic = 0,
  InvalidUrl,
  Timeout,
  BodyTooLarge,
  Interrupted,
  Dns,
  NoIp,
  BlockedIp,
  BlockedHostname,
  Tcp,
  BrokenPipe,
  Dial,
  DialTimeout,
  ConnectionRefused,
  ConnectionReset,
  Tls,
  TlsUnknownAuthority,
  TlsHostname,
  Http2,
  Http2Goaway,
  Http2Stream,
  Http2Connection,
  Decompression,
  DecodedTooLarge,
}

/** k6's error code of each `ErrorKind`, index for index (the WIT's comments). */
const ERROR_CODES: StaticArray<u32> = [
  1000, 1020, 1050, 1060, 1070, 1100, 1101, 1110, 1111, 1200, 1201, 1210, 1211, 1212, 1220, 1300, 1310,
  1311, 1600, 1610, 1630, 1650, 1701, 1702,
];

/** k6's error code of `kind` (`res.error_code` in k6); 1000 for a kind this SDK does not know. */
export function errorCodeOf(kind: ErrorKind): u32 {
  const i = <i32>kind;
  return i >= 0 && i < ERROR_CODES.length ? ERROR_CODES[i] : 1000;
}

/** Where the time of one request went, in nanoseconds. */
export class Timings {
  blocked: u64 = 0;
  connecting: u64 = 0;
  tlsHandshaking: u64 = 0;
  sending: u64 = 0;
  waiting: u64 = 0;
  receiving: u64 = 0;
  duration: u64 = 0;

  /** `duration` in milliseconds. */
  get durationMs(): f64 {
    return <f64>this.duration / 1e6;
  }
}

/** A `(name, value)` pair: a header field or a cookie. */
export class Field {
  constructor(public name: string, public value: string) {}
}

/**
 * The responses of the running export call, dropped when it returns
 * (AssemblyScript has no destructors to drop one when it is unreachable).
 */
const open = new Array<Response>(0);

/** Drop what the export call left open (called by test.ts). */
export function releaseResponses(): void {
  for (let i = 0; i < open.length; i++) open[i].close();
  open.length = 0;
}

/**
 * The engine's response. Its status, error and body length came with the
 * answer; the other getters ask the engine, and the body is copied into
 * the test only by `body` or `text()`. A response lasts until the
 * iteration (or setup, teardown) that sent it returns; `close()` releases
 * it before then. Using it afterwards aborts.
 */
export class Response {
  private live: bool = true;
  private bodyCopy: Uint8Array | null = null;
  private names: string[] | null = null;
  private values: string[] = [];
  private statusCode: i32 = 0;
  private errorText: string | null = null;
  private kind: i32 = -1;
  private bodyLen: u64 = 0;
  private handle: i32 = 0;

  /** The `sent` record at `at`: what `send` answered. Frees the error message's buffer. */
  constructor(at: usize, private discard: bool) {
    this.statusCode = <i32>load<u16>(at, 0);
    if (load<u8>(at, 4) != 0) {
      this.kind = <i32>load<u8>(at, 8);
      this.errorText = liftString(load<u32>(at, 12), load<u32>(at, 16));
    }
    this.bodyLen = load<u64>(at, 24);
    this.handle = load<i32>(at, 32);
    open.push(this);
  }

  private h(): i32 {
    if (!this.live) abort("wload-as: a Response was used after close() or after the iteration that sent it");
    return this.handle;
  }

  /** Return the response's body buffer to the engine; optional. */
  close(): void {
    if (this.live) {
      this.live = false;
      wit.responseDrop(this.handle);
    }
  }

  /** HTTP status, 0 when no response arrived (see `error`). */
  get status(): i32 {
    this.h();
    return this.statusCode;
  }
  /** The URL of this response: after redirects, the last one. */
  get url(): string {
    wit.responseUrl(this.h(), RET);
    return liftStringAt(RET);
  }
  /** The network error or timeout, when there was one. */
  get error(): string | null {
    this.h();
    return this.errorText;
  }
  /** What kind of failure `error` was (an `ErrorKind`), -1 when none. */
  get errorKind(): i32 {
    this.h();
    return this.kind;
  }
  /** k6-compatible error code: the failure's, else 1000 + status for a 4xx/5xx response, else 0. */
  get errorCode(): u32 {
    this.h();
    if (this.kind >= 0) return errorCodeOf(<ErrorKind>this.kind);
    return this.statusCode >= 400 ? 1000 + <u32>this.statusCode : 0;
  }
  /** Bytes received; known even when the body was discarded. */
  get bodyLength(): u64 {
    this.h();
    return this.bodyLen;
  }
  /** `HTTP/1.1` or `HTTP/2.0`; "" when no connection was made. */
  get proto(): string {
    wit.responseProto(this.h(), RET);
    return liftStringAt(RET);
  }
  /** `tls1.2` or `tls1.3` over https, "" for plain HTTP. */
  get tlsVersion(): string {
    wit.responseTlsVersion(this.h(), RET);
    return liftStringAt(RET);
  }
  /** How many redirects were followed to get this response. */
  get redirects(): u32 {
    return <u32>wit.responseRedirects(this.h());
  }
  get timings(): Timings {
    wit.responseTimings(this.h(), RET);
    const t = new Timings();
    t.blocked = load<u64>(RET, 0);
    t.connecting = load<u64>(RET, 8);
    t.tlsHandshaking = load<u64>(RET, 16);
    t.sending = load<u64>(RET, 24);
    t.waiting = load<u64>(RET, 32);
    t.receiving = load<u64>(RET, 40);
    t.duration = load<u64>(RET, 48);
    return t;
  }

  /** The body (empty when discarded), copied from the engine once. */
  get body(): Uint8Array {
    let body = this.bodyCopy;
    if (body === null) {
      const h = this.h();
      if (this.discard) {
        body = new Uint8Array(0);
      } else {
        wit.responseBody(h, RET);
        body = liftBytesAt(RET);
      }
      this.bodyCopy = body;
    }
    return body;
  }

  /** The body as UTF-8 text. */
  text(): string {
    return String.UTF8.decode(this.body.buffer);
  }

  private readHeaders(): void {
    if (this.names !== null) return;
    const names: string[] = [];
    wit.responseHeaders(this.h(), RET);
    liftFieldsAt(RET, names, this.values);
    this.names = names;
  }

  /** Header names in the order received, lower case; repeated fields stay apart. */
  get headerNames(): string[] {
    this.readHeaders();
    return this.names!;
  }
  /** The values of `headerNames`, index for index. */
  get headerValues(): string[] {
    this.readHeaders();
    return this.values;
  }
  /** Every header field in the order received. */
  get headers(): Field[] {
    const names = this.headerNames;
    const out = new Array<Field>(0);
    for (let i = 0; i < names.length; i++) out.push(new Field(names[i], this.values[i]));
    return out;
  }

  /** The first header named `name` (case-insensitive). */
  header(name: string): string | null {
    const n = utf8(name);
    wit.responseHeader(this.h(), changetype<usize>(n), n.byteLength, RET);
    return liftOptionStringAt(RET);
  }

  /** Every header named `name` (case-insensitive), in order. */
  headerAll(name: string): string[] {
    const lower = name.toLowerCase();
    const names = this.headerNames;
    const out: string[] = [];
    for (let i = 0; i < names.length; i++) if (names[i] == lower) out.push(this.values[i]);
    return out;
  }
}

/** An inclusive range of statuses: `new StatusRange(200, 299)`. */
export class StatusRange {
  constructor(public min: u16, public max: u16) {}
}

/** A request being built: `Request.get(url).header("accept", "text/html").send()`. */
export class Request {
  headerNames: string[] = [];
  headerValues: string[] = [];
  tagNames: string[] = [];
  tagValues: string[] = [];
  bodyBytes: Uint8Array | null = null;
  nameTag: string | null = null;
  /** Nanoseconds; -1 for the engine's default (60 s). */
  timeoutNs: i64 = -1;
  discard: bool = false;
  keep: bool = false;
  /** Redirects to follow; -1 for the run's setting (10). */
  redirectLimit: i64 = -1;
  statuses: StatusRange[] | null = null;
  /** Largest body kept, in bytes; -1 for the run's setting. */
  bodyLimit: i64 = -1;

  constructor(public method: string, public url: string) {}

  static get(url: string): Request {
    return new Request("GET", url);
  }
  static post(url: string): Request {
    return new Request("POST", url);
  }
  static put(url: string): Request {
    return new Request("PUT", url);
  }
  static patch(url: string): Request {
    return new Request("PATCH", url);
  }
  static del(url: string): Request {
    return new Request("DELETE", url);
  }
  static head(url: string): Request {
    return new Request("HEAD", url);
  }

  /** Add a request header; repeated names are sent repeated. */
  header(name: string, value: string): Request {
    this.headerNames.push(name);
    this.headerValues.push(value);
    return this;
  }
  /** Add a tag to every metric this request records. */
  tag(key: string, value: string): Request {
    this.tagNames.push(key);
    this.tagValues.push(value);
    return this;
  }
  body(bytes: Uint8Array): Request {
    this.bodyBytes = bytes;
    return this;
  }
  text(body: string): Request {
    this.bodyBytes = Uint8Array.wrap(String.UTF8.encode(body));
    return this;
  }
  /** A JSON body (already serialised) with its content type. */
  json(body: string): Request {
    return this.header("content-type", "application/json").text(body);
  }
  /** Group dynamic URLs under one `name` tag (`/user/{id}`). */
  name(name: string): Request {
    this.nameTag = name;
    return this;
  }
  timeoutMs(ms: i64): Request {
    this.timeoutNs = ms * 1_000_000;
    return this;
  }
  /** Count the response body without keeping it. */
  discardBody(): Request {
    this.discard = true;
    this.keep = false;
    return this;
  }
  /** Keep the body even when the run discards bodies (`--discard-response-bodies`). */
  keepBody(): Request {
    this.keep = true;
    this.discard = false;
    return this;
  }
  /** Follow at most `n` redirects (0: the 3xx response itself). */
  maxRedirects(n: u32): Request {
    this.redirectLimit = n;
    return this;
  }
  /** The statuses that count as expected in `http_req_failed` (default 200-399); `[]` expects none. */
  expectedStatuses(ranges: StatusRange[]): Request {
    this.statuses = ranges;
    return this;
  }
  /** Keep at most `n` bytes of body, on the wire and decoded (past it: 1060, 1702 decoded). */
  maxBodySize(n: u64): Request {
    this.bodyLimit = <i64>n;
    return this;
  }

  /** Send the request and wait for the whole response. */
  send(): Response {
    const at = heap.alloc(PAIR_SIZE);
    const lowered = new Lowered(this, at);
    wit.send(at, RET);
    lowered.free();
    heap.free(at);
    return new Response(RET, this.discard);
  }
}

/** One `tuple<request, request-options>` lowered at `at`, the buffers it points to kept alive. */
class Lowered {
  method: ArrayBuffer;
  url: ArrayBuffer;
  headers: FieldList;
  tags: FieldList;
  name: ArrayBuffer | null = null;
  statuses: usize = 0;

  constructor(r: Request, at: usize) {
    this.method = utf8(r.method);
    this.url = utf8(r.url);
    this.headers = new FieldList(r.headerNames, r.headerValues);
    this.tags = new FieldList(r.tagNames, r.tagValues);
    memory.fill(at, 0, PAIR_SIZE);
    store<u32>(at, changetype<usize>(this.method), 0);
    store<u32>(at, this.method.byteLength, 4);
    store<u32>(at, changetype<usize>(this.url), 8);
    store<u32>(at, this.url.byteLength, 12);
    store<u32>(at, this.headers.ptr, 16);
    store<u32>(at, this.headers.len, 20);
    const body = r.bodyBytes;
    if (body !== null) {
      store<u8>(at, 1, 24);
      store<u32>(at, body.dataStart, 28);
      store<u32>(at, body.byteLength, 32);
    }
    store<u32>(at, this.tags.ptr, 36);
    store<u32>(at, this.tags.len, 40);
    const name = r.nameTag;
    if (name !== null) {
      const n = utf8(name);
      this.name = n;
      store<u8>(at, 1, 44);
      store<u32>(at, changetype<usize>(n), 48);
      store<u32>(at, n.byteLength, 52);
    }
    this.options(r, at + REQUEST_SIZE);
  }

  /**
   * `request-options` at `o` (8-aligned): option<duration> timeout at 0
   * (value at 8), option<u32> max-redirects at 16 (20),
   * option<list<status-range>> at 24 (28), option<body-mode> at 36 (37),
   * option<u64> max-body-size at 40 (48). `none` (tag 0) is the run's
   * setting.
   */
  private options(r: Request, o: usize): void {
    if (r.timeoutNs >= 0) {
      store<u8>(o, 1, 0);
      store<u64>(o, <u64>r.timeoutNs, 8);
    }
    if (r.redirectLimit >= 0) {
      store<u8>(o, 1, 16);
      store<u32>(o, <u32>r.redirectLimit, 20);
    }
    const statuses = r.statuses;
    if (statuses !== null) {
      const n = statuses.length;
      store<u8>(o, 1, 24);
      if (n > 0) {
        // status-range: min u16 at 0, max u16 at 2; 4 bytes, 2-aligned.
        this.statuses = heap.alloc(<usize>n * 4);
        for (let i = 0; i < n; i++) {
          store<u16>(this.statuses + <usize>i * 4, statuses[i].min, 0);
          store<u16>(this.statuses + <usize>i * 4, statuses[i].max, 2);
        }
      }
      store<u32>(o, this.statuses, 28);
      store<u32>(o, n, 32);
    }
    if (r.discard || r.keep) {
      // body-mode: keep = 0, discard = 1.
      store<u8>(o, 1, 36);
      store<u8>(o, r.discard ? 1 : 0, 37);
    }
    if (r.bodyLimit >= 0) {
      store<u8>(o, 1, 40);
      store<u64>(o, <u64>r.bodyLimit, 48);
    }
  }

  free(): void {
    this.headers.free();
    this.tags.free();
    if (this.statuses != 0) heap.free(this.statuses);
    this.statuses = 0;
  }
}

/** `GET url`. */
export function get(url: string): Response {
  return Request.get(url).send();
}

/** `POST url` with a text body. */
export function post(url: string, body: string): Response {
  return Request.post(url).text(body).send();
}

/** Send `requests` in parallel; responses come back in the same order. */
export function batch(requests: Request[]): Response[] {
  const n = requests.length;
  const base = heap.alloc(<usize>max(n, 1) * PAIR_SIZE);
  const lowered = new Array<Lowered>(0);
  for (let i = 0; i < n; i++) {
    lowered.push(new Lowered(requests[i], base + <usize>i * PAIR_SIZE));
  }
  wit.batch(base, n, RET);
  for (let i = 0; i < n; i++) lowered[i].free();
  heap.free(base);
  const sents: usize = load<u32>(RET);
  const count = load<u32>(RET, 4);
  const out = new Array<Response>(0);
  for (let i: u32 = 0; i < count; i++) {
    out.push(new Response(sents + <usize>i * SENT_SIZE, requests[i].discard));
  }
  release(sents);
  return out;
}

/**
 * The VU's cookies that a request to `url` would send. The jar is the
 * VU's own and lasts the whole run.
 */
export function cookies(url: string): Field[] {
  const u = utf8(url);
  wit.cookies(changetype<usize>(u), u.byteLength, RET);
  const names: string[] = [];
  const values: string[] = [];
  liftFieldsAt(RET, names, values);
  const out = new Array<Field>(0);
  for (let i = 0; i < names.length; i++) out.push(new Field(names[i], values[i]));
  return out;
}

/** The value of the cookie `name` that a request to `url` would send, or null. */
export function cookie(url: string, name: string): string | null {
  const all = cookies(url);
  for (let i = 0; i < all.length; i++) if (all[i].name == name) return all[i].value;
  return null;
}

/**
 * Put a cookie into the VU's jar as if `url` had answered with
 * `set-cookie: <cookie>` (`"session=abc; Path=/"`). Returns null, or the
 * engine's reason when `url` or `cookie` cannot be parsed.
 */
export function setCookie(url: string, cookie: string): string | null {
  const u = utf8(url);
  const c = utf8(cookie);
  wit.setCookie(changetype<usize>(u), u.byteLength, changetype<usize>(c), c.byteLength, RET);
  if (load<u8>(RET) == 0) return null;
  return liftStringAt(RET + 4);
}

/** Empty the VU's cookie jar. */
export function clearCookies(): void {
  wit.clearCookies();
}
