// k6's HTTP features in JavaScript, one per mode (`-e MODE=`), with the
// same requests and check names as examples/rust/http_features, so that
// the two can be compared run for run:
//
// - `proto`: the response's `proto` and `tls_version` (plain HTTP/1.1 here).
// - `redirect`: `/redirect/3` followed (4 hops), and `redirects: 1`.
// - `cookies`: cookies set by the server, kept across iterations, set and
//   cleared through `http.cookieJar()`.
// - `expect`: `/status/404` expected through `responseCallback:
//   http.expectedStatuses(...)`; `/status/418` not.
// - `limit`: `maxBodySize` cuts `/bytes/4096` (1060) and a decoded gzip
//   body (1702), alone and in a batch; without it the body arrives whole.
// - `batch`, `compress`, `error`, `keep`, `options`, `repeated`, `lazy`,
//   `metrics`, `groups`, `vu`, `fail`: as in Rust (docs/parity.md lists what each exercises).
//
//   wload run script.js --iterations 3 -e MODE=redirect -e BASE_URL=http://127.0.0.1:8080   (builds it first, cached)
//   wload build script.js -o http_features.wasm   (the component, to keep or ship)

import http from 'k6/http';
import { check, group, sleep } from 'k6';
import { Counter, Gauge, Rate, Trend } from 'k6/metrics';
import exec from 'k6/execution';

const base = () => __ENV.BASE_URL || 'http://127.0.0.1:8080';
const url = (path) => base().replace(/\/+$/, '') + path;
const ok = (name, value) => check(null, { [name]: () => value });

const counter = new Counter('parity_counter');
const gauge = new Gauge('parity_gauge');
const rate = new Rate('parity_rate');
const trend = new Trend('parity_trend', true);

// Iterations this VU has run, kept by the script itself.
let done = 0;

export function setup() {
  return { token: 't0k3n' };
}

const COMPRESSIBLE =
  'wload compresses well. wload compresses well. wload compresses well. ' +
  'wload compresses well. wload compresses well. wload compresses well.';

const modes = {
  proto() {
    const res = http.get(url('/proto'));
    ok('status is 200', res.status === 200);
    ok('proto as expected', res.proto === (__ENV.EXPECT_PROTO || 'HTTP/1.1'));
    ok('server saw the proto', res.body === 'HTTP/1.1');
    ok('tls version as expected', res.tls_version === (__ENV.EXPECT_TLS || ''));
  },

  redirect() {
    const res = http.get(url('/redirect/3'));
    ok('redirect: followed to 200', res.status === 200);
    ok('redirect: 4 hops counted', res.redirects === 4);
    ok('redirect: final url', res.url === url('/'));
    const limited = http.get(url('/redirect/3'), { redirects: 1 });
    ok('redirect: limit stops at 302', limited.status === 302);
    ok('redirect: limit counted', limited.redirects === 1);
  },

  cookies() {
    const jar = http.cookieJar();
    if (__ITER === 0) {
      const res = http.get(url('/cookies/set?session=abc&theme=dark'));
      ok('cookies: server saw them', res.body.includes('session=abc'));
      return;
    }
    const session = jar.cookiesForURL(base()).session;
    ok('cookies: kept across iterations', session !== undefined && session[0] === 'abc');
    jar.set(base(), 'manual', '1', { path: '/' });
    let res = http.get(url('/cookies'));
    ok('cookies: sent with own', res.body.includes('session=abc') && res.body.includes('manual=1'));
    jar.clear(base());
    res = http.get(url('/cookies'));
    ok('cookies: cleared', res.body === '');
    // Back to the state of the first iteration.
    http.get(url('/cookies/set?session=abc&theme=dark'));
  },

  expect() {
    const expected = http.get(url('/status/404'), {
      responseCallback: http.expectedStatuses({ min: 200, max: 299 }, 404),
    });
    ok('expect: 404 answered', expected.status === 404);
    const bad = http.get(url('/status/418'));
    ok('expect: 418 answered', bad.status === 418);
  },

  limit() {
    const cut = http.get(url('/bytes/4096'), { maxBodySize: 1024 });
    ok('limit: past it fails with 1060', cut.error_code === 1060);
    const whole = http.get(url('/bytes/4096'));
    ok('limit: without it the body is whole', whole.error_code === 0 && whole.body_length === 4096);
    // About 50 bytes on the wire, 137 once decoded.
    const decoded = http.get(url('/compressed/gzip'), {
      headers: { 'accept-encoding': 'gzip' },
      maxBodySize: 100,
    });
    ok('limit: decoded past it fails with 1702', decoded.error_code === 1702);
    const res = http.batch([
      { method: 'GET', url: url('/bytes/4096'), params: { maxBodySize: 1024 } },
      url('/bytes/4096'),
      ['GET', url('/bytes/512'), null, { maxBodySize: 1024 }],
    ]);
    ok('limit: batch, each its own', res.map((r) => r.error_code).join() === '1060,0,0');
  },

  batch() {
    const n = Number(__ENV.BATCH_N || 12);
    const reqs = [];
    for (let i = 0; i < n; i++) reqs.push(url(`/bytes/${1000 + i}`));
    for (let i = 0; i < n; i++) reqs.push(url('/delay/50'));
    const res = http.batch(reqs);
    ok('batch: all answered', res.every((r) => r.status === 200));
    ok('batch: in order', res.slice(0, n).every((r, i) => r.body_length === 1000 + i));
  },

  error() {
    const res = http.get(__ENV.TARGET || base(), { timeout: Number(__ENV.TIMEOUT_MS || 2000) });
    const want = Number(__ENV.EXPECT_CODE || 0);
    if (res.error_code !== want) console.warn(`got code ${res.error_code} (${res.error}), expected ${want}`);
    ok('error: code as expected', res.error_code === want);
    ok('error: status 0', res.status === 0);
    ok('error: message', res.error !== '');
  },

  compress() {
    for (const alg of ['gzip', 'deflate', 'zstd']) {
      const res = http.get(url(`/compressed/${alg}`), { headers: { 'accept-encoding': alg } });
      ok(`compress: ${alg} decoded`, res.body === COMPRESSIBLE);
      ok(`compress: ${alg} length is decoded`, res.body_length === COMPRESSIBLE.length);
    }
  },

  keep() {
    // With --discard-response-bodies: k6's `responseType: 'text'` keeps one.
    const dropped = http.get(url('/bytes/100'));
    ok('keep: discarded by default', dropped.body === '' && dropped.body_length === 100);
    const kept = http.get(url('/bytes/100'), { responseType: 'text' });
    ok('keep: kept on request', kept.body.length === 100);
  },

  options() {
    const res = http.batch([
      ['GET', url('/redirect/1'), null, { redirects: 0 }],
      ['GET', url('/status/404'), null, { responseCallback: http.expectedStatuses(404) }],
      url('/status/404'),
    ]);
    ok('options: each its own', res.map((r) => r.status).join() === '302,404,404');
    ok('options: redirect not followed', res[0].redirects === 0);
  },

  repeated() {
    const res = http.get(url('/cookies/set?session=abc&theme=dark'), { redirects: 0 });
    // k6 joins repeated fields in `headers`; `cookies` keeps each one.
    const set = res.headers['Set-Cookie'].split(', ');
    ok(
      'repeated: both set-cookie fields',
      set.length === 2 &&
        set[0].startsWith('session=abc') &&
        set[1].startsWith('theme=dark') &&
        res.cookies.session[0].value === 'abc' &&
        res.cookies.theme[0].value === 'dark',
    );
    ok('repeated: Header is the first', res.cookies.session[0].path === '/' && set[0] === 'session=abc; Path=/');
  },

  lazy() {
    const n = Number(__ENV.LAZY_BYTES || 62914560);
    const res = http.get(url(`/bytes/${n}`));
    ok('lazy: answered', res.status === 200);
    ok('lazy: length known', res.body_length === n);
    ok('lazy: timed', res.timings.duration > 0);
    if (__ENV.READ === '1') ok('lazy: body read', res.body.length === n);
  },

  metrics(iter) {
    counter.add(1, { kind: 'a' });
    counter.add(2);
    gauge.add(iter + 1);
    rate.add(true, { kind: 'a' });
    rate.add(false);
    rate.add(true);
    trend.add(10, { kind: 'a' });
    trend.add(20);
    ok('metrics: recorded', true);
  },

  groups() {
    group('outer', () => {
      const res = http.get(url('/bytes/10'));
      ok('groups: outer answered', res.body_length === 10);
      group('inner', () => {
        const res = http.get(url('/bytes/20'));
        ok('groups: inner answered', res.body_length === 20);
      });
    });
    ok('groups: outside', true);
  },

  vu(iter, data) {
    ok('vu: id', __VU >= 1);
    ok('vu: iteration', __ITER === iter);
    ok('vu: scenario', exec.scenario.name === 'default');
    ok('vu: env', __ENV.PARITY === 'yes');
    ok('vu: env unset', __ENV.PARITY_UNSET === undefined);
    ok('vu: setup data', data !== undefined && data.token === 't0k3n');
    console.log(`parity: vu ${__VU} iteration ${iter}`);
    sleep(0.01);
  },

  fail(iter) {
    if (iter % 2 === 1) throw new Error('parity: deliberate failure');
    ok('fail: passing iteration', true);
  },
};

export default function (data) {
  const mode = __ENV.MODE || 'proto';
  if (!modes[mode]) throw new Error(`unknown MODE ${JSON.stringify(mode)}`);
  const iter = done;
  done += 1;
  modes[mode](iter, data);
}
