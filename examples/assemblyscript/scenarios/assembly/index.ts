// Several entry points for several scenarios, as examples/rust/scenarios:
// the default browses, `api` posts JSON to /echo. Each check names the
// scenario the VU runs in, so the summary shows which scenario ran which
// function; the engine picks the function by its index in `functions()`
// ("default", then the `test.exec` ones in order).
//
//   node ../../../sdk/assemblyscript/bin/wload-as.mjs build assembly/index.ts -o scenarios.wasm   (after `npm ci` in sdk/assemblyscript)
//   wload run scenarios.wasm --config two-scenarios.json -e BASE_URL=http://127.0.0.1:8080
//
// with scenarios choosing `"exec": "api"` or the default.

import { http, vu, check, env, Request, test } from "wload-as";
export * from "wload-as/exports";

function base(): string {
  let b = env("BASE_URL", "http://127.0.0.1:8080");
  while (b.endsWith("/")) b = b.slice(0, b.length - 1);
  return b;
}

test.withOptions('{"vus": 2, "iterations": 4}');

test.default((data: string | null): void => {
  const res = http.get(base() + "/");
  check(vu.scenario() + " ran default", res.status == 200);
});

test.exec("api", (data: string | null): void => {
  const body = '{"vu":' + vu.id().toString() + "}";
  const res = Request.post(base() + "/echo").json(body).send();
  check(vu.scenario() + " ran api", res.status == 200 && res.text() == body);
  // Scenario env overrides -e variables.
  check(vu.scenario() + " sees ORIGIN=" + env("ORIGIN", "-e"), true);
});
