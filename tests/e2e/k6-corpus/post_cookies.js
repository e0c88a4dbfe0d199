// A JSON POST read back with res.json(), the VU's cookie jar filled by a
// redirecting response, redirects turned off for one request, and a
// response callback that counts 404 as expected.
import http from 'k6/http';
import { check } from 'k6';

export const options = {
  vus: 1,
  iterations: 3,
  thresholds: { http_req_failed: ['rate==0'], checks: ['rate==1.0'] },
};

const base = 'http://test.k6.local';

export default function () {
  const payload = JSON.stringify({ name: 'k6', id: __ITER });
  const params = { headers: { 'Content-Type': 'application/json' } };
  const res = http.post(`${base}/echo`, payload, params);
  check(res, {
    'echoed json': (r) => r.json().name === 'k6' && r.json('id') === __ITER,
    'content type kept': (r) => r.headers['Content-Type'] === 'application/json',
  });

  const jar = http.cookieJar();
  const cookies = http.get(`${base}/cookies/set?flavour=oat`);
  check(cookies, {
    'redirect followed to the cookies': (r) => r.status === 200 && r.body.indexOf('flavour=oat') !== -1,
  });
  check(jar.cookiesForURL(`${base}/`), { 'jar has the cookie': (c) => c.flavour[0] === 'oat' });

  const hop = http.get(`${base}/redirect/1`, { redirects: 0 });
  check(hop, { 'redirect not followed': (r) => r.status === 302 || r.status === 301 });

  const missing = http.get(`${base}/no-such-page`, {
    responseCallback: http.expectedStatuses(200, 404),
  });
  check(missing, { 'is 404': (r) => r.status === 404 });
}
