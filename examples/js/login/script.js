// A test that logs in through a library plugin, as examples/rust/login
// does: it imports `wload:session/login@0.1.0`, which plugins/session
// exports, and wload links the two when it loads the test. Each VU logs
// in as vu-N on its first iteration, then calls GET /session/me with the
// session's header every iteration, and logs out (to log in again) every
// fifth.
//
//   wload run script.js --with session.wasm --vus 10 --duration 30s -e BASE_URL=http://127.0.0.1:8080
//
// The build (in `wload run`, or `wload build script.js --with
// session.wasm -o login.wasm`) reads the plugin's interface from the
// plugin itself. Its functions are camelCase in JS (`auth-header` is
// `authHeader`), its record is an object, and an `err` result is thrown.

import http from 'wload/http';
import { check } from 'wload';
import { login, authHeader, logout } from 'wload:session/login@0.1.0';

const base = () => (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');

// This VU's session, from its last login: module state lives in the VU's
// own instance.
let session = null;

export default function () {
  if (session === null) {
    session = login(base(), `vu-${__VU}`, __ENV.PASSWORD || 'wload');
  }
  const current = session;
  const [name, value] = authHeader(current);
  const res = http.get(`${base()}/session/me`, {
    headers: { [name]: value },
    tags: { name: 'GET /session/me' },
  });
  check(res, {
    'me is 200': (r) => r.status === 200,
    'me is the logged-in user': (r) => r.status === 200 && r.json().user === current.user,
  });
  if (__ITER % 5 === 4) {
    session = null;
    logout(base(), current);
  }
}
