// The smallest useful wload test: GET ${BASE_URL}/, check the status, and
// count the bytes received in a custom metric. No sleep: each VU sends
// requests back to back. Same as examples/rust/hello.
//
//   node ../../../sdk/assemblyscript/bin/wload-as.mjs build assembly/index.ts -o hello.wasm   (after `npm ci` in sdk/assemblyscript)
//   wload run hello.wasm --vus 10 --duration 10s -e BASE_URL=http://127.0.0.1:8080

import { http, check, env, Counter, test } from "wload-as";
export * from "wload-as/exports";

const bodyBytes = new Counter("body_bytes");

test.default((data: string | null): void => {
  let base = env("BASE_URL", "http://127.0.0.1:8080");
  while (base.endsWith("/")) base = base.slice(0, base.length - 1);
  const res = http.get(base + "/");
  check("status is 200", res.status == 200);
  bodyBytes.add(<f64>res.bodyLength);
});
