// The four custom metric kinds of k6/metrics, created in the init code
// and fed from response fields.
import http from 'k6/http';
import { check } from 'k6';
import { Counter, Gauge, Rate, Trend } from 'k6/metrics';

const calls = new Counter('calls');
const lastSize = new Gauge('last_size');
const okRate = new Rate('ok_rate');
const waiting = new Trend('waiting_time', true);

export const options = { vus: 1, iterations: 5 };

export default function () {
  const res = http.get('http://test.k6.local/bytes/1000');
  calls.add(1);
  lastSize.add(res.body.length);
  okRate.add(res.status === 200);
  waiting.add(res.timings.waiting);
  check(res, { 'is 200': (r) => r.status === 200 });
}
