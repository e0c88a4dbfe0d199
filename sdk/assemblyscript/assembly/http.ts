// HTTP through the engine's instrumented client: a request builder,
// `get`/`post`/`batch`, and responses read at once (status, timings, body)
// whose engine handle is dropped before they are returned.

import * as wit from "./bindings";
import { RET, FieldList, utf8, liftStringAt, liftOptionStringAt, liftBytesAt, liftFieldsAt } from "./abi";

/** `request` in the canonical ABI: 80 bytes, 8-aligned. */
const REQUEST_SIZE: usize = 80;

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

export class Response {
  status: i32 = 0;
  url: string = "";
  /** The network error or timeout, when there was one. */
  error: string | null = null;
  /** k6-compatible error code, 0 when none. */
  errorCode: u32 = 0;
  /** Bytes received; known even when the body was discarded. */
  bodyLength: u64 = 0;
  /** The body (empty when discarded). */
  body: Uint8Array = new Uint8Array(0);
  timings: Timings = new Timings();
  headerNames: string[] = [];
  headerValues: string[] = [];

  /** The body as UTF-8 text. */
  text(): string {
    return String.UTF8.decode(this.body.buffer);
  }

  /** The first header named `name` (names are lower case). */
  header(name: string): string | null {
    const lower = name.toLowerCase();
    for (let i = 0; i < this.headerNames.length; i++) {
      if (this.headerNames[i] == lower) return this.headerValues[i];
    }
    return null;
  }
}

/** Read everything from the handle `h`, then drop it. */
function readResponse(h: i32, discard: bool): Response {
  const r = new Response();
  r.status = wit.responseStatus(h);
  r.errorCode = <u32>wit.responseErrorCode(h);
  r.bodyLength = <u64>wit.responseBodyLen(h);
  wit.responseUrl(h, RET);
  r.url = liftStringAt(RET);
  wit.responseError(h, RET);
  r.error = liftOptionStringAt(RET);
  wit.responseTimings(h, RET);
  const t = r.timings;
  t.blocked = load<u64>(RET, 0);
  t.connecting = load<u64>(RET, 8);
  t.tlsHandshaking = load<u64>(RET, 16);
  t.sending = load<u64>(RET, 24);
  t.waiting = load<u64>(RET, 32);
  t.receiving = load<u64>(RET, 40);
  t.duration = load<u64>(RET, 48);
  wit.responseHeaders(h, RET);
  liftFieldsAt(RET, r.headerNames, r.headerValues);
  if (!discard) {
    wit.responseBody(h, RET);
    r.body = liftBytesAt(RET);
  }
  wit.responseDrop(h);
  return r;
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

  constructor(public method: string, public url: string) {}

  static get(url: string): Request {
    return new Request("GET", url);
  }
  static post(url: string): Request {
    return new Request("POST", url);
  }

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
    return this;
  }

  send(): Response {
    const lowered = new Lowered(this, heap.alloc(REQUEST_SIZE));
    const h = wit.send(lowered.at);
    lowered.free();
    heap.free(lowered.at);
    return readResponse(h, this.discard);
  }
}

/** One request lowered at `at`, with the buffers it points to kept alive. */
class Lowered {
  method: ArrayBuffer;
  url: ArrayBuffer;
  headers: FieldList;
  tags: FieldList;
  name: ArrayBuffer | null = null;

  constructor(r: Request, public at: usize) {
    this.method = utf8(r.method);
    this.url = utf8(r.url);
    this.headers = new FieldList(r.headerNames, r.headerValues);
    this.tags = new FieldList(r.tagNames, r.tagValues);
    memory.fill(at, 0, REQUEST_SIZE);
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
    if (r.timeoutNs >= 0) {
      store<u8>(at, 1, 56);
      store<u64>(at, r.timeoutNs, 64);
    }
    store<u8>(at, r.discard ? 1 : 0, 72);
  }

  free(): void {
    this.headers.free();
    this.tags.free();
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
  const base = heap.alloc(<usize>n * REQUEST_SIZE);
  const lowered = new Array<Lowered>(0);
  for (let i = 0; i < n; i++) {
    lowered.push(new Lowered(requests[i], base + <usize>i * REQUEST_SIZE));
  }
  wit.batch(base, n, RET);
  for (let i = 0; i < n; i++) lowered[i].free();
  heap.free(base);
  const handles: usize = load<u32>(RET);
  const count = load<u32>(RET, 4);
  const out = new Array<Response>(0);
  for (let i: u32 = 0; i < count; i++) {
    out.push(readResponse(load<i32>(handles + <usize>i * 4), requests[i].discard));
  }
  if (handles >= __heap_base) heap.free(handles);
  return out;
}
