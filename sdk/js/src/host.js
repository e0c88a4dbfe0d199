// The raw imports of the world `wload:test`, guarded: at build time the
// SDK's own top level runs inside the snapshotting step (wizer), where the
// engine is not there to answer, so a host call then gets a clear error
// instead of a trap with no explanation. The script's top level runs later,
// per VU (exports.js).

import * as wit_http from 'wload:test/http@0.1.0';
import * as wit_checks from 'wload:test/checks@0.1.0';
import * as wit_metrics from 'wload:test/metrics@0.1.0';
import * as wit_vu from 'wload:test/vu@0.1.0';

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

/** A WIT `result` error (thrown by the bindings) as a plain Error. */
function rethrow(e) {
  throw new Error(e && e.payload !== undefined ? String(e.payload) : String(e));
}

export const http = {
  /**
   * One request; `opts` (a WIT `request-options`) and `limits` (a WIT
   * `request-limits`) only when set. The plainest call that carries them,
   * as the Rust SDK makes (there it keeps a test's imports to what it uses;
   * componentize-js imports the whole world whatever is called).
   */
  send(req, opts, limits) {
    guard('an HTTP request');
    if (limits) return wit_http.sendWithLimits(req, opts || {}, limits);
    return opts ? wit_http.sendWith(req, opts) : wit_http.send(req);
  },
  /** Requests in parallel; `opts[i]` and `limits[i]` go with `reqs[i]`, when any is set. */
  batch(reqs, opts, limits) {
    guard('an HTTP request');
    if (limits.some((l) => l)) {
      return wit_http.batchWithLimits(reqs.map((r, i) => [r, opts[i] || {}, limits[i] || {}]));
    }
    if (!opts.some((o) => o)) return wit_http.batch(reqs);
    return wit_http.batchWith(reqs.map((r, i) => [r, opts[i] || {}]));
  },
  cookies(url) {
    guard('the cookie jar');
    return wit_http.cookies(url);
  },
  setCookie(url, cookie) {
    guard('the cookie jar');
    try {
      wit_http.setCookie(url, cookie);
    } catch (e) {
      rethrow(e);
    }
  },
  clearCookies() {
    guard('the cookie jar');
    wit_http.clearCookies();
  },
};

export const checks = {
  check(name, ok, tags) {
    guard('check()');
    return wit_checks.check(name, ok, tags);
  },
};

export const metrics = {
  define(name, kind, isTime) {
    guard(`new metric ${JSON.stringify(name)}`);
    return wit_metrics.define(name, kind, isTime);
  },
  add(id, value, tags) {
    guard('adding to a metric');
    wit_metrics.add(id, value, tags);
  },
};

export const vu = {
  id() {
    guard('__VU');
    return wit_vu.id();
  },
  iteration() {
    guard('__ITER');
    return Number(wit_vu.iteration());
  },
  scenario() {
    guard('the scenario name');
    return wit_vu.scenario();
  },
  sleep(seconds) {
    guard('sleep()');
    wit_vu.sleep(BigInt(Math.max(0, Math.round(seconds * 1e9))));
  },
  env(key) {
    guard(`__ENV.${String(key)}`);
    return wit_vu.env(key);
  },
  setupData() {
    guard('setup data');
    return wit_vu.setupData();
  },
  log(level, message) {
    if (running) wit_vu.log(level, message);
  },
  reportPanic(message) {
    if (running) wit_vu.reportPanic(message);
  },
  groupEnter(name) {
    guard('group()');
    wit_vu.groupEnter(name);
  },
  groupExit() {
    if (running) wit_vu.groupExit();
  },
};

/** `{k: v}` → `[[k, v]]`, the WIT form of tags and headers. */
export function fields(obj) {
  if (!obj) return [];
  return Object.entries(obj).map(([k, v]) => [String(k), String(v)]);
}
