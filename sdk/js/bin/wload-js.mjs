#!/usr/bin/env node
// `wload-js build script.js -o test.wasm`: bundle a k6-style script with the
// SDK (esbuild) and turn it into a component of the world `wload:test`
// (componentize-js, which pre-initialises the JS engine with wizer). The
// script is bundled as a lazily evaluated module, so the snapshot holds the
// engine and the SDK and each VU runs the script's top level itself, as k6
// runs the init code per VU. `--inputs FILE` writes the files the bundle
// read (JSON), for `wload run script.js`'s cache.

import { mkdtemp, rm, writeFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve, basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { componentize } from '@bytecodealliance/componentize-js';

const sdk = resolve(dirname(fileURLToPath(import.meta.url)), '..');

// `wload/...` and, so that k6 scripts port with few edits, `k6/...`.
const MODULES = {
  '': 'index.js',
  '/http': 'http.js',
  '/metrics': 'metrics.js',
  '/execution': 'execution.js',
};

const sdkModules = {
  name: 'wload-sdk',
  setup(b) {
    b.onResolve({ filter: /^(wload|k6)(\/[a-z]+)?$/ }, (args) => {
      const sub = args.path.replace(/^(wload|k6)/, '');
      const file = MODULES[sub];
      if (!file) return { errors: [{ text: `wload has no module ${args.path} (it has ${Object.keys(MODULES).map((m) => 'wload' + m).join(', ')})` }] };
      return { path: join(sdk, 'src', file) };
    });
    b.onResolve({ filter: /^wload-internal:exports$/ }, () => ({ path: join(sdk, 'src', 'exports.js') }));
    // Other WIT interfaces (a library plugin's, `wload:session/login@0.1.0`)
    // are the component's imports, bound by componentize-js.
    b.onResolve({ filter: /^[a-z][a-z0-9-]*:[a-z][a-z0-9-]*\/[a-z]/ }, (args) => ({ path: args.path, external: true }));
  },
};

function usage(message) {
  if (message) console.error(`wload-js: ${message}`);
  console.error(
    'usage: wload-js build <script.js> [-o <test.wasm>] [--inputs <inputs.json>] [--wit <dir> [--world <name>]]',
  );
  process.exit(2);
}

async function buildTest(script, out, inputsFile, wit) {
  const scriptPath = resolve(script);
  try {
    await stat(scriptPath);
  } catch {
    usage(`cannot read ${script}`);
  }
  const work = await mkdtemp(join(tmpdir(), 'wload-js-'));
  try {
    const entry = join(work, 'entry.js');
    await writeFile(
      entry,
      [
        // The SDK's globals (__ENV, __VU, __ITER, console) before the script.
        `import 'wload';`,
        `import { makeExports } from 'wload-internal:exports';`,
        // esbuild turns a require() of an ES module into a function that
        // evaluates it on first call: here, the first call from the engine.
        `const t = makeExports(() => require(${JSON.stringify(scriptPath)}));`,
        `export const options = t.options;`,
        `export const setup = t.setup;`,
        `export const functions = t.functions;`,
        `export const iteration = t.iteration;`,
        `export const teardown = t.teardown;`,
        '',
      ].join('\n'),
    );
    const bundle = join(work, 'bundle.js');
    const bundled = await build({
      entryPoints: [entry],
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      target: 'es2022',
      outfile: bundle,
      external: ['wload:test/*'],
      plugins: [sdkModules],
      logLevel: 'error',
      metafile: true,
    });
    if (inputsFile) {
      // Paths in the metafile are relative to the working directory; the
      // generated entry is not an input of the user's.
      const inputs = Object.keys(bundled.metafile.inputs)
        .map((p) => resolve(p))
        .filter((p) => p !== entry)
        .sort();
      await writeFile(inputsFile, JSON.stringify(inputs));
    }
    const { component } = await componentize({
      sourcePath: bundle,
      // `--wit`: a world that adds imports (a library plugin's) to wload's.
      witPath: wit.path ?? join(sdk, 'wit'),
      worldName: wit.world,
      // No WASI stdio (console goes to the engine's log), no wasi:http:
      // the engine's http interface does the requests. Clocks and random
      // stay for Date.now() and Math.random().
      disableFeatures: ['stdio', 'http', 'fetch-event'],
    });
    await writeFile(out, component);
    console.error(`wload-js: wrote ${out} (${(component.length / 1e6).toFixed(1)} MB)`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
if (args[0] !== 'build' || !args[1]) usage();
let out = basename(args[1]).replace(/\.([cm]?js|[cm]?ts)$/, '') + '.wasm';
let inputs;
const wit = { path: undefined, world: 'test' };
for (let i = 2; i < args.length; i++) {
  if (args[i] === '-o' || args[i] === '--output') out = args[++i] ?? usage('-o needs a file');
  else if (args[i] === '--inputs') inputs = args[++i] ?? usage('--inputs needs a file');
  else if (args[i] === '--wit') wit.path = resolve(args[++i] ?? usage('--wit needs a folder'));
  else if (args[i] === '--world') wit.world = args[++i] ?? usage('--world needs a name');
  else usage(`unknown argument ${args[i]}`);
}
try {
  await buildTest(args[1], resolve(out), inputs && resolve(inputs), wit);
} catch (e) {
  console.error(`wload-js: cannot build ${args[1]}: ${e && e.message ? e.message : e}`);
  process.exit(1);
}
