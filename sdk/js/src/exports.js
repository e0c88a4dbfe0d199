// Turns a k6-style script module (`export default function`, `export const
// options`, `setup`, `teardown`, named scenario functions) into the exports
// of the world `wload:test`. The build tool generates an entry that passes
// the script's namespace here.

import { markRunning, vu } from './host.js';
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

export function makeExports(script) {
  if (typeof script.default !== 'function') {
    throw new Error('the script has no `export default function`: wload runs it once per iteration');
  }
  // options is plain data: serialised once, at build time.
  const optionsJson = script.options === undefined ? '' : JSON.stringify(script.options);

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
      return optionsJson;
    },
    setup() {
      markRunning();
      if (typeof script.setup !== 'function') return undefined;
      let result;
      try {
        result = script.setup();
      } catch (e) {
        throw errorText(e);
      }
      return result === undefined ? undefined : JSON.stringify(result);
    },
    functions() {
      const named = Object.keys(script).filter((k) => typeof script[k] === 'function' && !RESERVED.has(k));
      return ['default', ...named];
    },
    iteration(exec) {
      markRunning();
      const fn = exec === 'default' ? script.default : RESERVED.has(exec) ? undefined : script[exec];
      if (typeof fn !== 'function') throw `this script exports no function named ${JSON.stringify(exec)}`;
      try {
        fn(data());
      } catch (e) {
        throw errorText(e);
      }
    },
    teardown() {
      markRunning();
      if (typeof script.teardown !== 'function') return;
      try {
        script.teardown(data());
      } catch (e) {
        throw errorText(e);
      }
    },
  };
}
