// `import http from 'wload/http'`: k6's http module over the engine's
// instrumented client. Responses are read lazily: a field is asked of the
// engine when the script first uses it, so a body nobody reads never
// crosses into the guest (see `Response`). Every per-request setting (timeout,
// redirects, expected statuses, body mode, body size) goes in the one
// `request-options` record of `wload:test@0.2.0`.

import { http as host, fields } from './host.js';

const NS_PER_MS = 1e6;

/** k6 header names: Canonical-Case (a split, not a regex with a callback per part: cheaper in QuickJS). */
function canonical(name) {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('-');
}

/**
 * The responses whose engine handle is still open. `releaseResponses`
 * (called by exports.js when the engine's call ends) drops them, so a
 * script that never reads a body never copies it out of the engine, and
 * no handle outlives the iteration that made it.
 */
const open = new Set();

/** Drop every open handle; what was not read by then is gone. */
export function releaseResponses() {
  for (const r of open) r._release();
  open.clear();
}

/** `Set-Cookie` fields as k6's `res.cookies`: `{name: [{name, value, …}]}`. */
function cookiesOf(fields) {
  const out = {};
  for (const [k, v] of fields) {
    if (k !== 'set-cookie') continue;
    const [pair, ...attrs] = v.split(';');
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    const c = {
      name: pair.slice(0, eq).trim(),
      value: pair.slice(eq + 1).trim(),
      domain: '',
      path: '',
      http_only: false,
      secure: false,
      max_age: 0,
      expires: 0,
    };
    for (const attr of attrs) {
      const at = attr.indexOf('=');
      const key = (at < 0 ? attr : attr.slice(0, at)).trim().toLowerCase();
      const val = at < 0 ? '' : attr.slice(at + 1).trim();
      if (key === 'domain') c.domain = val;
      else if (key === 'path') c.path = val;
      else if (key === 'httponly') c.http_only = true;
      else if (key === 'secure') c.secure = true;
      else if (key === 'max-age') c.max_age = Number.parseInt(val, 10) || 0;
      else if (key === 'expires') c.expires = Date.parse(val) || 0;
    }
    (out[c.name] ??= []).push(c);
  }
  return out;
}

/**
 * A response as k6 shows it (plus `body_length` and `redirects`, wload's
 * own). Each field is asked of the engine on first use and kept: a body
 * the script never reads stays in the engine. Reading the body reads the
 * rest too and drops the handle, which returns the engine's buffer; an
 * unread response is dropped when the iteration (or setup, teardown) that
 * made it ends.
 */
export class Response {
  constructor(handle, request, discard) {
    this._handle = handle;
    this._discard = discard;
    this._fields = {};
    this.request = { method: request.method, url: request.url };
    open.add(this);
  }

  /** Drop the engine's handle (its buffer goes back to the engine's pool). */
  _release() {
    const handle = this._handle;
    if (handle === undefined) return;
    this._handle = undefined;
    open.delete(this);
    handle.release();
  }

  /** The field `key`, read through `read(handle)` the first time. */
  _field(key, read) {
    if (key in this._fields) return this._fields[key];
    if (this._handle === undefined) {
      throw new Error(
        `res.${key} of ${this.request.method} ${this.request.url} was not read in the iteration that sent it: ` +
          'wload releases responses when their iteration ends, so read what a later iteration needs before then',
      );
    }
    const value = read(this._handle);
    this._fields[key] = value;
    return value;
  }

  /**
   * The field `key`, made by `make()` of fields already read (the header
   * list): it needs the handle only if they were not read yet.
   */
  _derived(key, make) {
    if (key in this._fields) return this._fields[key];
    const value = make();
    this._fields[key] = value;
    return value;
  }

  get status() {
    return this._field('status', (h) => h.status());
  }
  get url() {
    return this._field('url', (h) => h.url());
  }
  get error() {
    return this._field('error', (h) => h.error() ?? '');
  }
  get error_code() {
    return this._field('error_code', (h) => h.errorCode());
  }
  get timings() {
    return this._field('timings', (h) => h.timings());
  }
  /** Canonical-Case names; repeated fields joined with ", ", as k6 does. */
  get headers() {
    return this._derived('headers', () => {
      const out = {};
      for (const [k, v] of this._headerList()) {
        const name = canonical(k);
        out[name] = name in out ? `${out[name]}, ${v}` : v;
      }
      return out;
    });
  }
  /** The cookies this response set, by name (k6's `res.cookies`). */
  get cookies() {
    return this._derived('cookies', () => cookiesOf(this._headerList()));
  }
  /** Bytes received, also known when the body was discarded. */
  get body_length() {
    return this._field('body_length', (h) => Number(h.bodyLen()));
  }
  /** `HTTP/1.1` or `HTTP/2.0`; "" when no response came. */
  get proto() {
    return this._field('proto', (h) => h.proto());
  }
  /** `tls1.2`/`tls1.3`, "" for plain HTTP. */
  get tls_version() {
    return this._field('tls_version', (h) => h.tlsVersion());
  }
  /** Redirects followed to get this response (a wload extension). */
  get redirects() {
    return this._field('redirects', (h) => h.redirects());
  }
  /** The body as text; `null` with `responseType: 'none'`. */
  get body() {
    if (this._discard) return null;
    if ('body' in this._fields) return this._fields.body;
    const body = this._field('body', (h) => h.text());
    // Whoever reads the body reads the response: keep what only the
    // engine holds and free its buffer now rather than at the end of the
    // iteration. Kept raw: `headers` and `cookies` are made of the header
    // list when read (making them here cost a script that reads the body
    // three times the whole request).
    for (const key of HELD) void this[key];
    this._headerList();
    this._release();
    return body;
  }

  // Scripts may overwrite fields, as they can on k6's plain objects.
  set status(v) {
    this._fields.status = v;
  }
  set url(v) {
    this._fields.url = v;
  }
  set error(v) {
    this._fields.error = v;
  }
  set error_code(v) {
    this._fields.error_code = v;
  }
  set timings(v) {
    this._fields.timings = v;
  }
  set headers(v) {
    this._fields.headers = v;
  }
  set cookies(v) {
    this._fields.cookies = v;
  }
  set body_length(v) {
    this._fields.body_length = v;
  }
  set proto(v) {
    this._fields.proto = v;
  }
  set tls_version(v) {
    this._fields.tls_version = v;
  }
  set redirects(v) {
    this._fields.redirects = v;
  }
  set body(v) {
    this._discard = false;
    this._fields.body = v;
  }

  /** The raw `(name, value)` fields, read once for `headers` and `cookies`. */
  _headerList() {
    return this._field('_headerList', (h) => h.headers());
  }

  /** The body parsed as JSON; with a selector `a.b`, that member. */
  json(selector) {
    const body = this.body;
    if (body === null) throw new Error(`the body of ${this.url} was discarded (responseType: "none")`);
    let v = JSON.parse(body);
    if (selector) for (const part of String(selector).split('.')) v = v == null ? undefined : v[part];
    return v;
  }

  /** Every field, as `JSON.stringify(res)` shows a k6 response. */
  toJSON() {
    const out = { request: this.request, body: this.body };
    for (const key of FIELDS) out[key] = this[key];
    return out;
  }
}

/** What the engine holds besides the body, read with it. */
const HELD = ['status', 'url', 'error', 'error_code', 'timings', 'body_length', 'proto', 'tls_version', 'redirects'];

/** The fields besides `body`. */
const FIELDS = [
  'status',
  'url',
  'error',
  'error_code',
  'timings',
  'headers',
  'cookies',
  'body_length',
  'proto',
  'tls_version',
  'redirects',
];

function encodeBody(body, headers) {
  if (body === undefined || body === null) return undefined;
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (typeof body === 'object') {
    // k6 sends plain objects as a form.
    if (!headers.some(([k]) => k.toLowerCase() === 'content-type')) {
      headers.push(['content-type', 'application/x-www-form-urlencoded']);
    }
    const form = Object.entries(body)
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
      .join('&');
    return form;
  }
  // Strings cross as they are; the engine sends them as UTF-8.
  return String(body);
}

/** A k6 duration (`"10s"`, `"500ms"`, or milliseconds as a number) in ns. */
function timeoutNs(t) {
  if (t === undefined || t === null) return undefined;
  if (typeof t === 'number') return Math.round(t * NS_PER_MS);
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(String(t).trim());
  if (!m) throw new Error(`invalid timeout ${JSON.stringify(t)}: use "500ms", "10s", "1m" or milliseconds`);
  const unit = { ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 }[m[2]];
  return Math.round(Number(m[1]) * unit);
}

/** What `http.expectedStatuses` returns: the statuses that count as expected. */
class ExpectedStatuses {
  constructor(ranges) {
    this.ranges = ranges;
  }
}

/**
 * k6's `http.expectedStatuses(200, {min: 300, max: 399})`: statuses that
 * count as expected in `http_req_failed`, for `setResponseCallback` or a
 * request's `responseCallback`.
 */
export function expectedStatuses(...statuses) {
  return new ExpectedStatuses(
    statuses.map((s) => {
      if (Number.isInteger(s)) return { min: s, max: s };
      if (s && Number.isInteger(s.min) && Number.isInteger(s.max)) return { min: s.min, max: s.max };
      throw new Error(`expectedStatuses: ${JSON.stringify(s)} is neither a status nor {min, max}`);
    }),
  );
}

/** Every status, for a `null` callback (k6 then marks no request failed). */
const ANY_STATUS = [{ min: 0, max: 65535 }];

/** The WIT `expected-statuses` of a response callback; undefined: the run's. */
function expectedOf(callback) {
  if (callback === undefined) return undefined;
  if (callback === null) return ANY_STATUS;
  if (callback instanceof ExpectedStatuses) return callback.ranges;
  throw new Error(
    'a response callback must come from http.expectedStatuses(...) (as in k6, other functions are not supported)',
  );
}

/** Set by `setResponseCallback`; undefined keeps the run's setting. */
let defaultExpected;

/** k6's `http.setResponseCallback`: the expected statuses of this VU's requests. */
export function setResponseCallback(callback) {
  defaultExpected = expectedOf(callback);
}

function buildRequest(method, url, body, params = {}) {
  params = params || {};
  const headers = fields(params.headers);
  const tags = { ...(params.tags || {}) };
  // k6 takes the `name` tag from params.tags.name.
  const name = tags.name === undefined ? undefined : String(tags.name);
  delete tags.name;
  const req = {
    method: String(method).toUpperCase(),
    url: String(url),
    headers,
    body: encodeBody(body, headers),
    tags: fields(tags),
    name,
  };
  const expected = 'responseCallback' in params ? expectedOf(params.responseCallback) : defaultExpected;
  const redirects = params.redirects;
  if (redirects !== undefined && !(Number.isInteger(redirects) && redirects >= 0)) {
    throw new Error(`redirects must be a whole number >= 0, not ${JSON.stringify(redirects)}`);
  }
  const maxBodySize = params.maxBodySize;
  if (maxBodySize !== undefined && !(Number.isSafeInteger(maxBodySize) && maxBodySize >= 0)) {
    throw new Error(`maxBodySize must be a whole number of bytes >= 0, not ${JSON.stringify(maxBodySize)}`);
  }
  // `responseType: 'none'` discards the body; an explicit 'text' or
  // 'binary' keeps it against the run's `discardResponseBodies`, as in k6.
  const rt = params.responseType;
  const bodyMode = rt === 'none' ? 'discard' : rt === 'text' || rt === 'binary' ? 'keep' : undefined;
  const timeout = timeoutNs(params.timeout);
  const opts =
    expected === undefined && redirects === undefined && bodyMode === undefined && timeout === undefined &&
    maxBodySize === undefined
      ? null
      : { timeoutNs: timeout, maxRedirects: redirects, expectedStatuses: expected, bodyMode, maxBodySize };
  return { req, opts, discard: bodyMode === 'discard' };
}

/** `http.request(method, url, body, params)`. */
export function request(method, url, body, params) {
  const { req, opts, discard } = buildRequest(method, url, body, params);
  return new Response(host.send(req, opts), req, discard);
}

export function get(url, params) {
  return request('GET', url, null, params);
}
export function head(url, params) {
  return request('HEAD', url, null, params);
}
export function options(url, body, params) {
  return request('OPTIONS', url, body, params);
}
export function post(url, body, params) {
  return request('POST', url, body, params);
}
export function put(url, body, params) {
  return request('PUT', url, body, params);
}
export function patch(url, body, params) {
  return request('PATCH', url, body, params);
}
/** `http.del`, as k6 names DELETE. */
export function del(url, body, params) {
  return request('DELETE', url, body, params);
}

/** One entry of `http.batch`: a URL, `[method, url, body, params]` or `{method, url, body, params}`. */
function batchEntry(entry) {
  if (typeof entry === 'string') return buildRequest('GET', entry, null, {});
  if (Array.isArray(entry)) return buildRequest(entry[0], entry[1], entry[2], entry[3]);
  return buildRequest(entry.method || 'GET', entry.url, entry.body, entry.params);
}

/**
 * Send requests in parallel. An array gives an array of responses; an
 * object of named requests gives an object of responses under the same keys.
 */
export function batch(requests) {
  const keys = Array.isArray(requests) ? null : Object.keys(requests);
  const list = keys ? keys.map((k) => requests[k]) : requests;
  const built = list.map(batchEntry);
  const reqs = built.map((b) => b.req);
  const opts = built.map((b) => b.opts);
  const responses = host.batch(reqs, opts).map((h, i) => new Response(h, reqs[i], built[i].discard));
  if (!keys) return responses;
  return Object.fromEntries(keys.map((k, i) => [k, responses[i]]));
}

/**
 * The VU's cookie jar (k6's `http.cookieJar()`): cookies the server set
 * are kept across iterations and sent back automatically.
 */
class CookieJar {
  /** `{name: [value, …]}` of the cookies that would be sent to `url`. */
  cookiesForURL(url) {
    const out = {};
    for (const [name, value] of host.cookies(String(url))) (out[name] ??= []).push(value);
    return out;
  }

  /** Set a cookie as if `url` had sent it; options as k6's. */
  set(url, name, value, options = {}) {
    let cookie = `${name}=${value}`;
    if (options.domain) cookie += `; Domain=${options.domain}`;
    if (options.path) cookie += `; Path=${options.path}`;
    if (options.expires) cookie += `; Expires=${options.expires}`;
    if (options.max_age !== undefined) cookie += `; Max-Age=${options.max_age}`;
    if (options.secure) cookie += '; Secure';
    if (options.http_only) cookie += '; HttpOnly';
    host.setCookie(String(url), cookie);
  }

  /** Remove the cookie `name` that `url` would receive. */
  delete(url, name) {
    host.setCookie(String(url), `${name}=; Path=/; Max-Age=0`);
  }

  /** Empty the jar (every site's cookies: wload keeps one jar per VU). */
  clear(_url) {
    host.clearCookies();
  }
}

const jar = new CookieJar();

/** This VU's cookie jar. */
export function cookieJar() {
  return jar;
}

export default {
  request,
  get,
  head,
  options,
  post,
  put,
  patch,
  del,
  batch,
  expectedStatuses,
  setResponseCallback,
  cookieJar,
  Response,
};
