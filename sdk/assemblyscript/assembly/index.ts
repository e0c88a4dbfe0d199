// wload-as: write wload load tests in AssemblyScript.
//
//   import { http, check, env, Counter, test } from "wload-as";
//   export * from "wload-as/exports";
//
//   const bodyBytes = new Counter("body_bytes");
//   test.default((data: string | null): void => {
//     const res = http.get(env("BASE_URL", "http://127.0.0.1:8080") + "/");
//     check("status is 200", res.status == 200);
//     bodyBytes.add(<f64>res.bodyLength);
//   });
//
// Build with `npx wload-as build assembly/index.ts -o test.wasm`: a core
// module carrying the world's metadata, which wload turns into a component
// when it loads it.

import * as httpModule from "./http";
import * as vuModule from "./vu";

export { httpModule as http, vuModule as vu };
export { Request, Response, Timings, Field, StatusRange, ErrorKind, errorCodeOf } from "./http";
export { Counter, Gauge, Rate, Trend } from "./metrics";
export { check, checkTagged, env, group, groupEnter, groupExit, log, LogLevel, setupData } from "./vu";
export { test, TestDefinition, IterationFn, SetupFn, TeardownFn } from "./test";

/** Pause this VU for `seconds` without using a core. */
export function sleep(seconds: f64): void {
  vuModule.sleepMs(seconds * 1000);
}

/** End this iteration with `message` (AssemblyScript has no exceptions: the instance traps and is replaced). */
export function fail(message: string): void {
  abort(message);
}
