// A shopper, in groups (same requests and checks as examples/rust/shop):
// `home`, then `cart` with `add` and `view` nested inside it. Requests and
// checks carry their group's path as the `group` tag (`::cart::add`), each
// group's time is a `group_duration` sample, and the summary lists the
// checks under their groups.
//
//   wload run script.js --vus 10 --duration 30s -e BASE_URL=http://127.0.0.1:8080   (builds it first, cached)
//   wload build script.js -o shop.wasm   (the component, to keep or ship)

import http from 'wload/http';
import { check, group } from 'wload';

const base = () => (__ENV.BASE_URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');

export default function () {
  group('home', () => {
    const home = http.get(`${base()}/`);
    check(home, { 'home is 200': (r) => r.status === 200 });
  });

  group('cart', () => {
    group('add', () => {
      for (const item of [3, 7]) {
        const res = http.post(`${base()}/echo`, JSON.stringify({ item }), {
          headers: { 'Content-Type': 'application/json' },
        });
        check(res, { 'item added': (r) => r.status === 200 });
      }
    });
    group('view', () => {
      const cart = http.get(`${base()}/bytes/100`);
      check(cart, { 'cart has 100 bytes': (r) => r.body_length === 100 });
    });
  });

  check(null, { 'visit complete': () => true });
}
