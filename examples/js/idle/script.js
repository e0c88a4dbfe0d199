// A mostly idle VU, k6-style: GET ${BASE_URL}/, check the status, sleep one
// second. Same as examples/rust/idle: thousands of these measure what a
// JavaScript VU costs while it waits (its instance of the embedded engine,
// its connection); the per-VU figures in docs/BENCHMARKS.md come from it.
// It imports only k6's modules, so k6 runs the same file for the
// comparison (`k6 run script.js`).
//
//   wload run script.js --vus 1000 --duration 10s -e BASE_URL=http://127.0.0.1:8080   (builds it first, cached)
//   wload build script.js -o idle.wasm   (the component, to keep or ship)

import http from 'k6/http';
import { check, sleep } from 'k6';

const base = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');

export default function () {
  const res = http.get(`${base}/`);
  check(res, { 'status is 200': (r) => r.status === 200 });
  sleep(1);
}
