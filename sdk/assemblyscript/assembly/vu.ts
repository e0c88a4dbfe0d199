// The running VU: id, iteration, scenario, `-e` variables, setup data,
// sleep, log, checks and groups.

import * as wit from "./bindings";
import { RET, FieldList, utf8, liftStringAt, liftOptionStringAt } from "./abi";

/** This VU's number (1-based; 0 in setup and teardown). */
export function id(): u32 {
  return <u32>wit.vuId();
}

/** Iterations this VU started before the current one. */
export function iteration(): u64 {
  return <u64>wit.vuIteration();
}

export function scenario(): string {
  wit.vuScenario(RET);
  return liftStringAt(RET);
}

/** Pause this VU for `ms` milliseconds without using a core. */
export function sleepMs(ms: f64): void {
  wit.vuSleep(<i64>(Math.max(ms, 0) * 1e6));
}

/** A `-e KEY=VALUE` variable, or `fallback` when it is not set. */
export function env(key: string, fallback: string = ""): string {
  const k = utf8(key);
  wit.vuEnv(changetype<usize>(k), k.byteLength, RET);
  const v = liftOptionStringAt(RET);
  return v === null ? fallback : v;
}

/** The JSON text `setup` returned, or null. */
export function setupData(): string | null {
  wit.vuSetupData(RET);
  return liftOptionStringAt(RET);
}

export enum LogLevel {
  Debug = 0,
  Info = 1,
  Warn = 2,
  Error = 3,
}

/** A line in the engine's log, prefixed with the VU id. */
export function log(message: string, level: LogLevel = LogLevel.Info): void {
  const m = utf8(message);
  wit.vuLog(level, changetype<usize>(m), m.byteLength);
}

/**
 * Enter the group `name` (k6's `group`): until `groupExit`, requests,
 * checks and metrics carry the tag `group=::outer::name`. Groups nest.
 */
export function groupEnter(name: string): void {
  const n = utf8(name);
  wit.vuGroupEnter(changetype<usize>(n), n.byteLength);
}

/** Leave the innermost group, recording its `group_duration`. */
export function groupExit(): void {
  wit.vuGroupExit();
}

/**
 * Run `fn` inside the group `name`. AssemblyScript functions cannot
 * capture locals: keep state in globals, or use `groupEnter`/`groupExit`.
 */
export function group(name: string, fn: () => void): void {
  groupEnter(name);
  fn();
  groupExit();
}

/** Record one outcome of the check `name`; returns `ok`. */
export function check(name: string, ok: bool): bool {
  const n = utf8(name);
  return wit.check(changetype<usize>(n), n.byteLength, ok ? 1 : 0, 0, 0) != 0;
}

/** `check` with tags on the sample. */
export function checkTagged(name: string, ok: bool, keys: string[], values: string[]): bool {
  const n = utf8(name);
  const tags = new FieldList(keys, values);
  const r = wit.check(changetype<usize>(n), n.byteLength, ok ? 1 : 0, tags.ptr, tags.len) != 0;
  tags.free();
  return r;
}

/**
 * Abort handler (installed by `wload-as build` with `--use abort=`): tell
 * the engine why the instance is about to trap. AssemblyScript has no
 * exceptions, so this is also how `fail` ends an iteration.
 */
export function wloadAbort(
  message: string | null = null,
  file: string | null = null,
  line: u32 = 0,
  column: u32 = 0,
): void {
  let text = message === null ? "abort" : message;
  if (file !== null) text += ` (at ${file}:${line}:${column})`;
  const m = utf8(text);
  wit.vuReportPanic(changetype<usize>(m), m.byteLength);
  unreachable();
}
