// The HTTP client's features in AssemblyScript, one per mode (`-e MODE=`),
// with the same requests and check names as examples/rust/http_features,
// so that the two can be compared run for run: `proto`, `redirect`,
// `cookies`, `expect`, `limit`, `batch`, `compress`, `error`, `keep`, `options`, `repeated`,
// `lazy`, `metrics`, `groups`, `vu` and `fail` (docs/parity.md lists what
// each exercises).
//
//   node ../../../sdk/assemblyscript/bin/wload-as.mjs build assembly/index.ts -o http_features.wasm   (after `npm ci` in sdk/assemblyscript)
//   wload run http_features.wasm --iterations 3 -e MODE=redirect -e BASE_URL=http://127.0.0.1:8080

import {
  http,
  vu,
  check,
  env,
  groupEnter,
  groupExit,
  log,
  LogLevel,
  fail,
  sleep,
  Counter,
  Gauge,
  Rate,
  Trend,
  Request,
  StatusRange,
  test,
} from "wload-as";
export * from "wload-as/exports";

const counter = new Counter("parity_counter");
const gauge = new Gauge("parity_gauge");
const rate = new Rate("parity_rate");
const trend = new Trend("parity_trend", true);

// Iterations this VU has run, kept by the test itself.
let done: u64 = 0;
let base = "";

const COMPRESSIBLE =
  "wload compresses well. wload compresses well. wload compresses well. " +
  "wload compresses well. wload compresses well. wload compresses well.";
const ALGORITHMS = ["gzip", "deflate", "zstd"];
function url(path: string): string {
  return base + path;
}

test.setup((): string | null => '{"token":"t0k3n"}');

test.default((data: string | null): void => {
  const iter = done;
  done += 1;
  const root = env("BASE_URL", "http://127.0.0.1:8080");
  base = root;
  while (base.endsWith("/")) base = base.slice(0, base.length - 1);
  const mode = env("MODE", "proto");
  if (mode == "proto") {
    const res = http.get(url("/proto"));
    check("status is 200", res.status == 200);
    check("proto as expected", res.proto == env("EXPECT_PROTO", "HTTP/1.1"));
    check("server saw the proto", res.text() == "HTTP/1.1");
    check("tls version as expected", res.tlsVersion == env("EXPECT_TLS", ""));
  } else if (mode == "redirect") {
    const res = http.get(url("/redirect/3"));
    check("redirect: followed to 200", res.status == 200);
    check("redirect: 4 hops counted", res.redirects == 4);
    check("redirect: final url", res.url == url("/"));
    const limited = Request.get(url("/redirect/3")).maxRedirects(1).send();
    check("redirect: limit stops at 302", limited.status == 302);
    check("redirect: limit counted", limited.redirects == 1);
  } else if (mode == "cookies") {
    if (vu.iteration() == 0) {
      const res = http.get(url("/cookies/set?session=abc&theme=dark"));
      check("cookies: server saw them", res.text().includes("session=abc"));
      return;
    }
    const session = http.cookie(root, "session");
    check("cookies: kept across iterations", session !== null && session == "abc");
    const refused = http.setCookie(root, "manual=1; Path=/");
    if (refused !== null) fail("set-cookie refused: " + refused);
    const text = http.get(url("/cookies")).text();
    check("cookies: sent with own", text.includes("session=abc") && text.includes("manual=1"));
    http.clearCookies();
    check("cookies: cleared", http.get(url("/cookies")).text() == "");
    // Back to the state of the first iteration.
    http.get(url("/cookies/set?session=abc&theme=dark"));
  } else if (mode == "expect") {
    const ok = Request.get(url("/status/404"))
      .expectedStatuses([new StatusRange(200, 299), new StatusRange(404, 404)])
      .send();
    check("expect: 404 answered", ok.status == 404);
    const bad = http.get(url("/status/418"));
    check("expect: 418 answered", bad.status == 418);
  } else if (mode == "limit") {
    const cut = Request.get(url("/bytes/4096")).maxBodySize(1024).send();
    check("limit: past it fails with 1060", cut.errorCode == 1060);
    const whole = http.get(url("/bytes/4096"));
    check("limit: without it the body is whole", whole.errorCode == 0 && whole.body.length == 4096);
    // About 50 bytes on the wire, 137 once decoded.
    const decoded = Request.get(url("/compressed/gzip")).header("accept-encoding", "gzip").maxBodySize(100).send();
    check("limit: decoded past it fails with 1702", decoded.errorCode == 1702);
    const res = http.batch([
      Request.get(url("/bytes/4096")).maxBodySize(1024),
      Request.get(url("/bytes/4096")),
      Request.get(url("/bytes/512")).maxBodySize(1024),
    ]);
    check(
      "limit: batch, each its own",
      res.length == 3 && res[0].errorCode == 1060 && res[1].errorCode == 0 && res[2].errorCode == 0,
    );
  } else if (mode == "batch") {
    const n = <i32>parseInt(env("BATCH_N", "12"));
    const reqs = new Array<Request>(0);
    for (let i = 0; i < n; i++) reqs.push(Request.get(url("/bytes/" + (1000 + i).toString())));
    for (let i = 0; i < n; i++) reqs.push(Request.get(url("/delay/50")));
    const res = http.batch(reqs);
    let answered = res.length == 2 * n;
    let inOrder = answered;
    for (let i = 0; i < res.length; i++) answered = answered && res[i].status == 200;
    for (let i = 0; i < n && inOrder; i++) inOrder = res[i].bodyLength == <u64>(1000 + i);
    check("batch: all answered", answered);
    check("batch: in order", inOrder);
  } else if (mode == "error") {
    const res = Request.get(env("TARGET", root))
      .timeoutMs(<i64>parseInt(env("TIMEOUT_MS", "2000")))
      .send();
    const want = <u32>parseInt(env("EXPECT_CODE", "0"));
    if (res.errorCode != want) {
      log("got code " + res.errorCode.toString() + ", expected " + want.toString(), LogLevel.Warn);
    }
    check("error: code as expected", res.errorCode == want);
    check("error: status 0", res.status == 0);
    check("error: message", res.error !== null);
  } else if (mode == "compress") {
    for (let i = 0; i < ALGORITHMS.length; i++) {
      const alg = ALGORITHMS[i];
      const res = Request.get(url("/compressed/" + alg)).header("accept-encoding", alg).send();
      check("compress: " + alg + " decoded", res.text() == COMPRESSIBLE);
      check("compress: " + alg + " length is decoded", res.bodyLength == <u64>COMPRESSIBLE.length);
    }
  } else if (mode == "keep") {
    // With --discard-response-bodies.
    const dropped = http.get(url("/bytes/100"));
    check("keep: discarded by default", dropped.body.length == 0 && dropped.bodyLength == 100);
    const kept = Request.get(url("/bytes/100")).keepBody().send();
    check("keep: kept on request", kept.body.length == 100);
  } else if (mode == "options") {
    const res = http.batch([
      Request.get(url("/redirect/1")).maxRedirects(0),
      Request.get(url("/status/404")).expectedStatuses([new StatusRange(404, 404)]),
      Request.get(url("/status/404")),
    ]);
    check("options: each its own", res[0].status == 302 && res[1].status == 404 && res[2].status == 404);
    check("options: redirect not followed", res[0].redirects == 0);
  } else if (mode == "repeated") {
    const res = Request.get(url("/cookies/set?session=abc&theme=dark")).maxRedirects(0).send();
    const set = res.headerAll("set-cookie");
    check(
      "repeated: both set-cookie fields",
      set.length == 2 && set[0].startsWith("session=abc") && set[1].startsWith("theme=dark"),
    );
    const first = res.header("Set-Cookie");
    check("repeated: Header is the first", first !== null && set.length > 0 && first == set[0]);
  } else if (mode == "lazy") {
    const n = <u64>parseInt(env("LAZY_BYTES", "62914560"));
    const res = http.get(url("/bytes/" + n.toString()));
    check("lazy: answered", res.status == 200);
    check("lazy: length known", res.bodyLength == n);
    check("lazy: timed", res.timings.duration > 0);
    if (env("READ") == "1") check("lazy: body read", <u64>res.body.length == n);
  } else if (mode == "metrics") {
    counter.recordTagged(1, ["kind"], ["a"]);
    counter.add(2);
    gauge.set(<f64>(iter + 1));
    rate.recordTagged(1, ["kind"], ["a"]);
    rate.add(false);
    rate.add(true);
    trend.recordTagged(10, ["kind"], ["a"]);
    trend.add(20);
    check("metrics: recorded", true);
  } else if (mode == "groups") {
    groupEnter("outer");
    check("groups: outer answered", http.get(url("/bytes/10")).bodyLength == 10);
    groupEnter("inner");
    check("groups: inner answered", http.get(url("/bytes/20")).bodyLength == 20);
    groupExit();
    groupExit();
    check("groups: outside", true);
  } else if (mode == "vu") {
    check("vu: id", vu.id() >= 1);
    check("vu: iteration", vu.iteration() == iter);
    check("vu: scenario", vu.scenario() == "default");
    check("vu: env", env("PARITY") == "yes");
    check("vu: env unset", env("PARITY_UNSET", "unset") == "unset");
    check("vu: setup data", data !== null && data.includes('"token":"t0k3n"'));
    log("parity: vu " + vu.id().toString() + " iteration " + iter.toString());
    sleep(0.01);
  } else if (mode == "fail") {
    if (iter % 2 == 1) fail("parity: deliberate failure");
    check("fail: passing iteration", true);
  } else {
    fail('unknown MODE "' + mode + '"');
  }
});
