// `import { check, sleep, group, fail } from 'wload'`: the k6 core API.
// Globals `__ENV`, `__VU`, `__ITER` and `console` are installed here too,
// because every entry imports this module.

import { checks, vu, fields } from './host.js';

/**
 * k6's check: run each predicate on `value`, record one sample per named
 * check, and return true when all passed. A predicate that throws fails.
 */
export function check(value, sets, tags) {
  const tagList = fields(tags);
  let all = true;
  for (const [name, predicate] of Object.entries(sets)) {
    let ok;
    try {
      ok = typeof predicate === 'function' ? Boolean(predicate(value)) : Boolean(predicate);
    } catch (_) {
      ok = false;
    }
    all = checks.check(name, ok, tagList) && all;
  }
  return all;
}

/** Pause this VU for `seconds` (fractions allowed) without using a core. */
export function sleep(seconds) {
  vu.sleep(Number(seconds));
}

/**
 * Run `fn` inside the group `name` and return its result, as k6's `group`:
 * requests, checks and metrics inside carry the tag `group=::outer::name`,
 * and the group's time is recorded in `group_duration`. Groups nest.
 */
export function group(name, fn) {
  vu.groupEnter(String(name));
  try {
    return fn();
  } finally {
    vu.groupExit();
  }
}

/** Fail the current iteration with `message`, as k6's `fail`. */
export function fail(message) {
  throw new Error(message === undefined ? 'fail() called' : String(message));
}

Object.defineProperty(globalThis, '__ENV', {
  value: new Proxy(
    {},
    {
      get(_target, key) {
        // An unset variable is `undefined`, as in k6, however the bindings render `none`.
        return typeof key === 'string' ? (vu.env(key) ?? undefined) : undefined;
      },
      has(_target, key) {
        return typeof key === 'string' && vu.env(key) != null;
      },
    },
  ),
});
Object.defineProperty(globalThis, '__VU', { get: () => vu.id() });
Object.defineProperty(globalThis, '__ITER', { get: () => vu.iteration() });

function show(args) {
  return args
    .map((a) => {
      if (typeof a === 'string') return a;
      if (a instanceof Error) return a.stack ? `${a}\n${a.stack}` : String(a);
      try {
        return JSON.stringify(a);
      } catch (_) {
        return String(a);
      }
    })
    .join(' ');
}

// The engine's log, prefixed with the VU id (stdio is not linked into tests).
globalThis.console = {
  log: (...a) => vu.log('info', show(a)),
  info: (...a) => vu.log('info', show(a)),
  debug: (...a) => vu.log('debug', show(a)),
  warn: (...a) => vu.log('warn', show(a)),
  error: (...a) => vu.log('error', show(a)),
};
