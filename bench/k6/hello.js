// k6's side of `examples/rust/hello`, line for line: GET ${BASE_URL}${URL_PATH},
// check the status, count the body bytes in a custom metric, and sleep
// SLEEP_MS after each request when it is set. bench/compare.sh runs it.
import http from 'k6/http';
import { check, sleep } from 'k6';
import { Counter } from 'k6/metrics';

const bodyBytes = new Counter('body_bytes');
const base = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
const url = `${base}/${(__ENV.URL_PATH || '/').replace(/^\/+/, '')}`;
const think = __ENV.SLEEP_MS ? Number(__ENV.SLEEP_MS) / 1000 : 0;

export default function () {
  const res = http.get(url);
  check(res, { 'status is 200': (r) => r.status === 200 });
  bodyBytes.add(res.body ? res.body.length : 0);
  if (think > 0) {
    sleep(think);
  }
}
