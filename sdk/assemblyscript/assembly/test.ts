// The exports of the world `wload:test/test@0.2.0` (`options`, `setup`,
// `functions`, `iteration`, `teardown`), `cabi_realloc` and the
// post-return functions, dispatching to the functions a test registers
// with `test`. Each call that runs test code drops the responses it left
// open before it returns.

import { RET, lowerOwned, release } from "./abi";
import * as wit from "./bindings";
import { releaseResponses } from "./http";

export type IterationFn = (data: string | null) => void;
export type SetupFn = () => string | null;
export type TeardownFn = (data: string | null) => void;

/** What a test registers at its top level. */
export class TestDefinition {
  /** Default options as k6 JSON (`{"vus": 10, "duration": "10s"}`). */
  options: string = "";
  defaultFn: IterationFn | null = null;
  setupFn: SetupFn | null = null;
  teardownFn: TeardownFn | null = null;
  names: string[] = [];
  fns: IterationFn[] = [];

  /** The function run once per iteration (the `default` entry point). */
  default(fn: IterationFn): TestDefinition {
    this.defaultFn = fn;
    return this;
  }
  /** Another entry point for scenarios' `exec`. */
  exec(name: string, fn: IterationFn): TestDefinition {
    this.names.push(name);
    this.fns.push(fn);
    return this;
  }
  /** Runs once before the VUs; returns JSON text (or null) for every VU. */
  setup(fn: SetupFn): TestDefinition {
    this.setupFn = fn;
    return this;
  }
  teardown(fn: TeardownFn): TestDefinition {
    this.teardownFn = fn;
    return this;
  }
  withOptions(json: string): TestDefinition {
    this.options = json;
    return this;
  }
}

/** The test of this module: `test.default((data) => { ... })`. */
export const test = new TestDefinition();

let dataRead = false;
let data: string | null = null;

function setupData(): string | null {
  if (!dataRead) {
    wit.vuSetupData(RET);
    const tag = load<u8>(RET);
    data = tag == 0 ? null : String.UTF8.decodeUnsafe(load<u32>(RET, 4), load<u32>(RET, 8));
    if (tag != 0) release(load<u32>(RET, 4));
    dataRead = true;
  }
  return data;
}

// Return areas of the exports; heap buffers they point to are freed by the
// matching `cabi_post_*` once the engine has copied them.
const EXPORT_RET: usize = memory.data(16, 8);

export function cabi_realloc(oldPtr: usize, oldSize: usize, align: usize, newSize: usize): usize {
  // heap.alloc aligns to 16, more than any canonical ABI alignment (8).
  if (oldPtr == 0) return heap.alloc(newSize);
  return heap.realloc(oldPtr, newSize);
}

export function options(): usize {
  lowerOwned(test.options, EXPORT_RET);
  return EXPORT_RET;
}

export function cabi_post_options(ret: usize): void {
  heap.free(load<u32>(ret));
}

export function setup(): usize {
  const fn = test.setupFn;
  memory.fill(EXPORT_RET, 0, 16);
  if (fn !== null) {
    const result = fn();
    releaseResponses();
    if (result !== null) {
      store<u8>(EXPORT_RET, 1, 4);
      lowerOwned(result, EXPORT_RET + 8);
    }
  }
  return EXPORT_RET;
}

export function cabi_post_setup(ret: usize): void {
  if (load<u8>(ret, 4) != 0) heap.free(load<u32>(ret, 8));
}

export function functions(): usize {
  const n = 1 + test.names.length;
  const list = heap.alloc(<usize>n * 8);
  lowerOwned("default", list);
  for (let i = 0; i < test.names.length; i++) lowerOwned(test.names[i], list + <usize>(i + 1) * 8);
  store<u32>(EXPORT_RET, list);
  store<u32>(EXPORT_RET, n, 4);
  return EXPORT_RET;
}

export function cabi_post_functions(ret: usize): void {
  const list: usize = load<u32>(ret);
  const n: u32 = load<u32>(ret, 4);
  for (let i: u32 = 0; i < n; i++) heap.free(load<u32>(list + <usize>i * 8));
  heap.free(list);
}

/** `result<_, string>`: ok, or the error text lowered after the tag. */
function resultUnit(err: string | null): usize {
  memory.fill(EXPORT_RET, 0, 16);
  if (err !== null) {
    store<u8>(EXPORT_RET, 1);
    lowerOwned(err, EXPORT_RET + 4);
  }
  return EXPORT_RET;
}

/** One iteration of the entry point `functions()[entry]`: 0 is `default`, then those of `test.exec`. */
export function iteration(entry: u32): usize {
  let fn: IterationFn | null = null;
  if (entry == 0) {
    fn = test.defaultFn;
    if (fn === null) return resultUnit("this test has no default function: register it with test.default(fn)");
  } else if (entry <= <u32>test.fns.length) {
    fn = test.fns[<i32>entry - 1];
  } else {
    return resultUnit(`this test has no entry point number ${entry}; it has ${1 + test.names.length}`);
  }
  fn(setupData());
  releaseResponses();
  return resultUnit(null);
}

export function cabi_post_iteration(ret: usize): void {
  if (load<u8>(ret) != 0) heap.free(load<u32>(ret, 4));
}

export function teardown(): usize {
  const fn = test.teardownFn;
  if (fn !== null) fn(setupData());
  releaseResponses();
  return resultUnit(null);
}

export function cabi_post_teardown(ret: usize): void {
  if (load<u8>(ret) != 0) heap.free(load<u32>(ret, 4));
}
