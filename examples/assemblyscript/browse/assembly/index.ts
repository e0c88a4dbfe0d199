// A user browsing a site: a page, two assets fetched in parallel, an API
// call, a check on each, and one second of think time. Same as
// examples/rust/browse, plus setup data: setup() returns the base URL as
// JSON and every VU receives it.
//
//   node ../../../sdk/assemblyscript/bin/wload-as.mjs build assembly/index.ts -o browse.wasm   (after `npm ci` in sdk/assemblyscript)
//   wload run browse.wasm --vus 1000 --duration 30s -e BASE_URL=http://127.0.0.1:8080

import { http, vu, check, env, sleep, Trend, Request, test } from "wload-as";
export * from "wload-as/exports";

const pageTime = new Trend("page_time", true);

test.withOptions('{"vus": 10, "duration": "10s"}');

// The setup data is a JSON string holding the base URL (no quotes or
// backslashes in a URL, so quoting is all the encoding it needs).
test.setup((): string | null => {
  let base = env("BASE_URL", "http://127.0.0.1:8080");
  while (base.endsWith("/")) base = base.slice(0, base.length - 1);
  return '"' + base + '"';
});

test.default((data: string | null): void => {
  const base = data!.slice(1, data!.length - 1);
  const home = http.get(base + "/");
  check("home is 200", home.status == 200);

  // Dynamic URLs share one `name` tag, so they form one series.
  const item = (<u64>vu.id() * 7 + vu.iteration()) % 100;
  const page = Request.get(base + "/bytes/1024?item=" + item.toString())
    .name("/bytes/1024?item={item}")
    .send();
  check("item page has 1024 bytes", page.bodyLength == 1024);
  pageTime.add(home.timings.durationMs + page.timings.durationMs);

  // Static assets, fetched in parallel as a browser would.
  const assets = http.batch([
    Request.get(base + "/bytes/300").name("asset"),
    Request.get(base + "/bytes/700").name("asset"),
  ]);
  check("assets arrive in order", assets.length == 2 && assets[0].bodyLength == 300 && assets[1].bodyLength == 700);

  // The target echoes the body back as it was sent.
  const sent = '{"vu":' + vu.id().toString() + ',"item":' + item.toString() + "}";
  const api = Request.post(base + "/echo").json(sent).send();
  check("echo returns the item", api.status == 200 && api.text().includes('"item":' + item.toString() + "}"));

  sleep(1);
});
