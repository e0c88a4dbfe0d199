// A k6 test in TypeScript, which k6 runs as it is: typed options from
// `k6/options` (a type-only import, elided with the types), an interface,
// a generic function and an enum.
import http from 'k6/http';
import { check } from 'k6';
import { Options } from 'k6/options';

export const options: Options = {
  vus: 2,
  iterations: 6,
  thresholds: { checks: ['rate==1'] },
};

interface HasStatus {
  status: number;
}

enum Expected {
  Ok = 200,
}

function statusOf<T extends HasStatus>(r: T): number {
  return r.status;
}

export default function (): void {
  const res = http.get('http://test.k6.local/');
  check(res, {
    'typed status is 200': (r) => statusOf(r) === Expected.Ok,
  });
}
