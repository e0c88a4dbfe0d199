// Thresholds on built-in, tagged and custom metrics, a Rate fed from
// check(), a group of parallel "static asset" requests, and the base URL
// read from __ENV at the top level, as most k6 scripts do.
import http from 'k6/http';
import { check, group, sleep } from 'k6';
import { Rate } from 'k6/metrics';

const BASE_URL = __ENV.BASE_URL || 'https://test.k6.local';

const failures = new Rate('check_failure_rate');

export const options = {
  vus: 2,
  iterations: 6,
  thresholds: {
    http_req_duration: ['p(95)<5000'],
    'http_req_duration{staticAsset:yes}': ['p(99)<5000'],
    check_failure_rate: ['rate<0.01', { threshold: 'rate<=0.05', abortOnFail: true }],
  },
};

export default function () {
  const res = http.get(`${BASE_URL}/`);
  const ok = check(res, {
    'status is 200': (r) => r.status === 200,
    'body is present': (r) => r.body.indexOf('hello') !== -1,
  });
  failures.add(!ok);

  group('Static Assets', function () {
    const responses = http.batch([
      ['GET', `${BASE_URL}/bytes/64`, null, { tags: { staticAsset: 'yes' } }],
      ['GET', `${BASE_URL}/bytes/128`, null, { tags: { staticAsset: 'yes' } }],
    ]);
    failures.add(
      !check(responses, {
        'assets are 200': (r) => r[0].status === 200 && r[1].status === 200,
        'asset sizes': (r) => r[0].body.length === 64 && r[1].body.length === 128,
      }),
    );
  });

  sleep(0.1);
}
