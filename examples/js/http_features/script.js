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
//
//   node ../../../sdk/js/bin/wload-js.mjs build script.js -o http_features.wasm
//   wload run http_features.wasm --iterations 3 -e MODE=redirect -e BASE_URL=http://127.0.0.1:8080

import http from 'k6/http';
import { check } from 'k6';

const base = () => __ENV.BASE_URL || 'http://127.0.0.1:8080';
const url = (path) => base().replace(/\/+$/, '') + path;
const ok = (name, value) => check(null, { [name]: () => value });

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
};

export default function () {
  const mode = __ENV.MODE || 'proto';
  if (!modes[mode]) throw new Error(`unknown MODE ${JSON.stringify(mode)}`);
  modes[mode]();
}
