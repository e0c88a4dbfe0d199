// A user browsing a site, k6-style: a page, two assets fetched in
// parallel, an API call, a check on each, and one second of think time.
// Same as examples/rust/browse, plus setup data: setup() reads the target
// once and every VU receives the result.
//
//   wload run script.js --vus 1000 --duration 30s -e BASE_URL=http://127.0.0.1:8080   (builds it first, cached)
//   wload build script.js -o browse.wasm   (the component, to keep or ship)

import http from 'wload/http';
import { check, sleep } from 'wload';
import { Trend } from 'wload/metrics';

export const options = { vus: 10, duration: '10s' };

const pageTime = new Trend('page_time', true);

function baseUrl() {
  return (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
}

export function setup() {
  return { base: baseUrl() };
}

export default function (data) {
  const base = data.base;
  const home = http.get(`${base}/`);
  check(home, { 'home is 200': (r) => r.status === 200 });

  // Dynamic URLs share one `name` tag, so they form one series.
  const item = (__VU * 7 + __ITER) % 100;
  const page = http.get(`${base}/bytes/1024?item=${item}`, { tags: { name: '/bytes/1024?item={item}' } });
  check(page, { 'item page has 1024 bytes': (r) => r.body_length === 1024 });
  pageTime.add(home.timings.duration + page.timings.duration);

  // Static assets, fetched in parallel as a browser would.
  const assets = http.batch([
    ['GET', `${base}/bytes/300`, null, { tags: { name: 'asset' } }],
    ['GET', `${base}/bytes/700`, null, { tags: { name: 'asset' } }],
  ]);
  check(assets, { 'assets arrive in order': (r) => r[0].body_length === 300 && r[1].body_length === 700 });

  const api = http.post(`${base}/echo`, JSON.stringify({ vu: __VU, item }), {
    headers: { 'Content-Type': 'application/json' },
  });
  check(api, { 'echo returns the item': (r) => r.status === 200 && r.json().item === item });

  sleep(1);
}
