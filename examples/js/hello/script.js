// The smallest useful wload test, k6-style: GET ${BASE_URL}/, check the
// status, and count the bytes received in a custom metric. No sleep: each
// VU sends requests back to back. Same as examples/rust/hello.
//
//   wload run script.js --vus 10 --duration 10s -e BASE_URL=http://127.0.0.1:8080   (builds it first, cached)
//   wload build script.js -o hello.wasm   (the component, to keep or ship)

import http from 'wload/http';
import { check } from 'wload';
import { Counter } from 'wload/metrics';

const bodyBytes = new Counter('body_bytes');

export default function () {
  const base = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
  const res = http.get(`${base}/`);
  check(res, { 'status is 200': (r) => r.status === 200 });
  bodyBytes.add(res.body_length);
}
