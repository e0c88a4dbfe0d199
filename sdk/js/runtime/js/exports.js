// Turns a k6-style script module (`export default function`, `export const
// options`, `setup`, `teardown`, named scenario functions) into the exports
// of the world `wload:test@0.2.0`. The runtime (sdk/js/runtime) passes a
// function evaluating the script here.

import { markRunning, vu } from './host.js';
import { releaseResponses } from './http.js';
import './index.js';

/** Exports that are not entry points a scenario can `exec`. */
const RESERVED = new Set(['default', 'options', 'setup', 'teardown', 'handleSummary']);

/** An exception as one line for the engine's log (a thrown value becomes `err`). */
function errorText(e) {
  if (e instanceof Error) {
    const frame = (e.stack || '').split('\n').find((l) => l.trim() !== '');
    return frame ? `${e} (at ${frame.trim()})` : String(e);
  }
  return typeof e === 'string' ? e : JSON.stringify(e);
}

/**
 * Every VU starts from the same snapshot, where QuickJS seeded its
 * `Math.random` once: left alone, every VU would draw the same numbers.
 * Replaced, on the VU's first call, by a generator (mulberry32) seeded
 * from the clock and the VU's id.
 */
function reseedRandom() {
  let state = (Math.imul(vu.id() + 1, 0x9e3779b1) ^ Date.now() ^ (Date.now() / 4294967296)) >>> 0;
  Math.random = function random() {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The world's exports for the script that `load()` evaluates. The script's
 * top level runs on the first call from the engine, inside the VU's own
 * instance, as k6 runs the init code once per VU: it may read `__ENV`,
 * `__VU` and the rest of the VU's state. (The build snapshots the engine
 * and the SDK only; evaluating the script there would run it where no
 * engine answers.)
 */
export function makeExports(load) {
  let script;
  function module() {
    if (script === undefined) {
      markRunning();
      reseedRandom();
      const loaded = load();
      if (typeof loaded.default !== 'function') {
        throw new Error('the script has no `export default function`: wload runs it once per iteration');
      }
      script = loaded;
    }
    return script;
  }
  /** For the exports without a `result`: the message reaches the engine before the trap. */
  function orPanic(fn) {
    try {
      return fn();
    } catch (e) {
      vu.reportPanic(`the script's top level failed: ${errorText(e)}`);
      throw e;
    }
  }

  let names;
  /** The entry points: `default`, then the other exported functions. */
  function entries() {
    if (names === undefined) {
      const script = module();
      const named = Object.keys(script).filter((k) => typeof script[k] === 'function' && !RESERVED.has(k));
      names = ['default', ...named];
    }
    return names;
  }

  let setupData;
  let setupDataRead = false;
  function data() {
    if (!setupDataRead) {
      const text = vu.setupData();
      setupData = text === undefined || text === null ? undefined : JSON.parse(text);
      setupDataRead = true;
    }
    return setupData;
  }

  return {
    options() {
      const options = orPanic(module).options;
      return options === undefined ? '' : JSON.stringify(options);
    },
    setup() {
      try {
        const script = module();
        if (typeof script.setup !== 'function') return undefined;
        const result = script.setup();
        return result === undefined ? undefined : JSON.stringify(result);
      } catch (e) {
        throw errorText(e);
      } finally {
        releaseResponses();
      }
    },
    functions() {
      return orPanic(entries);
    },
    /** `entry`: the index of the function in `functions()`. */
    iteration(entry) {
      let fn;
      let exec;
      try {
        const script = module();
        exec = entries()[entry];
        fn = exec === 'default' ? script.default : RESERVED.has(exec) ? undefined : script[exec];
      } catch (e) {
        throw errorText(e);
      }
      if (typeof fn !== 'function') throw `this script exports no function named ${JSON.stringify(exec)}`;
      try {
        fn(data());
      } catch (e) {
        throw errorText(e);
      } finally {
        releaseResponses();
      }
    },
    teardown() {
      try {
        const script = module();
        if (typeof script.teardown !== 'function') return;
        script.teardown(data());
      } catch (e) {
        throw errorText(e);
      } finally {
        releaseResponses();
      }
    },
  };
}
