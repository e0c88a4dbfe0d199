// Init code that k6 runs once per VU: a counter kept across a VU's
// iterations, the VU number and an environment variable read at the top
// level, a setup() whose data every iteration gets, and a second scenario
// running a named function.
import http from 'k6/http';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const BASE_URL = __ENV.BASE_URL;
const initVu = __VU;
const tag = __ENV.RUN_TAG || 'none';
let iterationsOfThisVu = 0;

const perVu = new Counter('per_vu_iterations');

export const options = {
  scenarios: {
    main: { executor: 'per-vu-iterations', vus: 3, iterations: 4 },
    extra: { executor: 'shared-iterations', vus: 1, iterations: 2, exec: 'extra', startTime: '0s' },
  },
};

export function setup() {
  const res = http.get(`${BASE_URL}/`);
  return { greeting: res.body };
}

export default function (data) {
  iterationsOfThisVu++;
  perVu.add(1);
  const res = http.get(`${BASE_URL}/echo?vu=${__VU}`);
  check(data, { 'setup data arrived': (d) => d.greeting === 'hello' });
  check(res, { 'echo is 200': (r) => r.status === 200 });
  check(null, {
    'init code ran in this VU': () => initVu === __VU && initVu > 0,
    'state kept across iterations': () => iterationsOfThisVu === __ITER + 1,
    'env read at the top level': () => tag === 'corpus',
  });
}

export function extra(data) {
  http.get(`${BASE_URL}/status/204`);
  check(data, { 'extra got setup data': (d) => d.greeting === 'hello' });
}

export function teardown(data) {
  check(data, { 'teardown got setup data': (d) => d.greeting === 'hello' });
}
