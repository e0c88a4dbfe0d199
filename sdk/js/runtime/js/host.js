// The engine's imports (the world `wload:test@0.2.0`), guarded: the SDK's
// own top level runs during pre-initialisation (the snapshot the build
// takes), where the engine is not there to answer, so a host call then
// gets a clear error instead of a trap with no explanation. The script's
// top level runs later, per VU (exports.js). `wload:host` is the native
// module of the QuickJS runtime (sdk/js/runtime/src/host.rs).

import * as wit from 'wload:host';

let running = false;

/** Called on the first call from the engine (exports.js). */
export function markRunning() {
  running = true;
}

function guard(what) {
  if (!running) {
    throw new Error(
      `${what} cannot be used while the component is being built (pre-initialisation), ` +
        'where there is no engine: only the SDK runs then, the script runs in the VUs',
    );
  }
}

/**
 * A response in the engine: the status, error and body length came with
 * it; the rest is asked for when read. `release()` frees the engine's
 * buffer.
 */
class Handle {
  constructor(sent) {
    this._sent = sent;
    this._h = sent.handle;
  }
  status() {
    return this._sent.status;
  }
  error() {
    return this._sent.error ? this._sent.error.message : undefined;
  }
  /** k6's `error_code`: the failure's code, else 1000 + a 4xx/5xx status, else 0. */
  errorCode() {
    if (this._sent.error) return this._sent.error.code;
    return this._sent.status >= 400 ? 1000 + this._sent.status : 0;
  }
  bodyLen() {
    return this._sent.bodyLen;
  }
  url() {
    return wit.respUrl(this._h);
  }
  timings() {
    return wit.respTimings(this._h);
  }
  headers() {
    return wit.respHeaders(this._h);
  }
  header(name) {
    return wit.respHeader(this._h, name);
  }
  proto() {
    return wit.respProto(this._h);
  }
  tlsVersion() {
    return wit.respTlsVersion(this._h);
  }
  redirects() {
    return wit.respRedirects(this._h);
  }
  text() {
    return wit.respText(this._h);
  }
  body() {
    return wit.respBody(this._h);
  }
  release() {
    wit.respRelease(this._h);
  }
}

export const http = {
  /** One request (a WIT `request`) with its `request-options` (or null: the run's). */
  send(req, opts) {
    guard('an HTTP request');
    return new Handle(wit.send(req, opts));
  },
  /** Requests in parallel; `opts[i]` goes with `reqs[i]`. */
  batch(reqs, opts) {
    guard('an HTTP request');
    return wit.batch(reqs.map((r, i) => [r, opts[i]])).map((s) => new Handle(s));
  },
  cookies(url) {
    guard('the cookie jar');
    return wit.cookies(url);
  },
  setCookie(url, cookie) {
    guard('the cookie jar');
    wit.setCookie(url, cookie);
  },
  clearCookies() {
    guard('the cookie jar');
    wit.clearCookies();
  },
};

export const checks = {
  check(name, ok, tags) {
    guard('check()');
    return wit.check(name, ok, tags);
  },
};

export const metrics = {
  define(name, kind, isTime) {
    guard(`new metric ${JSON.stringify(name)}`);
    return wit.define(name, kind, isTime);
  },
  add(id, value, tags) {
    guard('adding to a metric');
    wit.add(id, value, tags);
  },
};

export const vu = {
  id() {
    guard('__VU');
    return wit.vuId();
  },
  iteration() {
    guard('__ITER');
    return wit.vuIteration();
  },
  scenario() {
    guard('the scenario name');
    return wit.scenario();
  },
  sleep(seconds) {
    guard('sleep()');
    wit.sleep(seconds);
  },
  env(key) {
    guard(`__ENV.${String(key)}`);
    return wit.env(key);
  },
  setupData() {
    guard('setup data');
    return wit.setupData();
  },
  log(level, message) {
    if (running) wit.log(level, message);
  },
  reportPanic(message) {
    if (running) wit.reportPanic(message);
  },
  groupEnter(name) {
    guard('group()');
    wit.groupEnter(name);
  },
  groupExit() {
    if (running) wit.groupExit();
  },
};

/** `{k: v}` → `[[k, v]]`, the WIT form of tags and headers. */
export function fields(obj) {
  if (!obj) return [];
  return Object.entries(obj).map(([k, v]) => [String(k), String(v)]);
}
