// k6's side of `examples/rust/mixed`, request for request and check for
// check: a 5-byte body, 100 KB and 1 MB bodies, gzip-compressed JSON, a
// three-hop redirect chain and a batch of three. bench/compare.sh runs it
// against its nginx.
import http from 'k6/http';
import { check } from 'k6';

const base = (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
const jsonBytes = __ENV.JSON_BYTES ? Number(__ENV.JSON_BYTES) : null;
const gzip = { headers: { 'Accept-Encoding': 'gzip' } };
const len = (r) => (r.body ? r.body.length : 0);
const jsonOk = (r) => r.status === 200 && (jsonBytes === null ? len(r) > 0 : len(r) === jsonBytes);

export default function () {
  const tiny = http.get(`${base}/`);
  check(tiny, { 'tiny is 5 bytes': (r) => r.status === 200 && len(r) === 5 });

  const medium = http.get(`${base}/100k.bin`);
  check(medium, { '100k body': (r) => r.status === 200 && len(r) === 102400 });

  const large = http.get(`${base}/1m.bin`);
  check(large, { '1m body': (r) => r.status === 200 && len(r) === 1048576 });

  const json = http.get(`${base}/data.json`, gzip);
  check(json, { 'gzip json decoded': jsonOk });

  const chain = http.get(`${base}/r/3`);
  check(chain, { 'redirect chain ends at /': (r) => r.status === 200 && len(r) === 5 });

  const batch = http.batch([
    ['GET', `${base}/`],
    ['GET', `${base}/100k.bin`],
    ['GET', `${base}/data.json`, null, gzip],
  ]);
  check(batch, {
    'batch bodies': (b) =>
      b.length === 3 && len(b[0]) === 5 && len(b[1]) === 102400 && jsonOk(b[2]),
  });
}
