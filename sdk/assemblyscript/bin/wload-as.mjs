#!/usr/bin/env node
// `wload-as build assembly/index.ts -o test.wasm`: compile an AssemblyScript
// test to a core module that follows the canonical ABI of `wload:test` and
// append the world's metadata (a `component-type` custom section, as
// wit-bindgen does). wload turns such a module into a component when it
// loads it, so no other tool is needed.

import { mkdtemp, readFile, rm, symlink, mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve, basename } from "node:path";
import { fileURLToPath } from "node:url";
import asc from "assemblyscript/asc";

const sdk = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const SECTION = "component-type:wload:test";

function usage(message) {
  if (message) console.error(`wload-as: ${message}`);
  console.error("usage: wload-as build <assembly/index.ts> [-o <test.wasm>] [--debug]");
  process.exit(2);
}

function leb128(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return Buffer.from(out);
}

/** A custom section (id 0): size, name (length-prefixed), payload. */
function customSection(name, payload) {
  const nameBytes = Buffer.from(name, "utf8");
  const body = Buffer.concat([leb128(nameBytes.length), nameBytes, payload]);
  return Buffer.concat([Buffer.from([0]), leb128(body.length), body]);
}

async function build(entry, out, debug) {
  const work = await mkdtemp(join(tmpdir(), "wload-as-"));
  try {
    // Resolve `wload-as` to this SDK without installing it in the project.
    const packages = join(work, "packages");
    await mkdir(packages);
    await symlink(join(sdk, "assembly"), join(packages, "wload-as"), "dir");
    const core = join(work, "test.wasm");
    const args = [
      resolve(entry),
      "--outFile", core,
      "--path", packages,
      "--runtime", "incremental",
      // Errors (and `fail`) report to the engine before trapping.
      "--use", "abort=~lib/wload-as/vu/wloadAbort",
      ...(debug ? ["--debug"] : ["--optimizeLevel", "3", "--shrinkLevel", "1"]),
    ];
    const { error, stderr } = await asc.main(args);
    if (error) {
      process.stderr.write(stderr.toString());
      throw new Error(`asc failed: ${error.message}`);
    }
    const module = await readFile(core);
    const metadata = await readFile(join(sdk, "component-type.wasm"));
    await writeFile(out, Buffer.concat([module, customSection(SECTION, metadata)]));
    console.error(`wload-as: wrote ${out} (${module.length + metadata.length} bytes)`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
if (args[0] !== "build" || !args[1]) usage();
let out = basename(dirname(resolve(args[1]))) === "assembly"
  ? basename(dirname(dirname(resolve(args[1])))) + ".wasm"
  : basename(args[1]).replace(/\.ts$/, "") + ".wasm";
let debug = false;
for (let i = 2; i < args.length; i++) {
  if (args[i] === "-o" || args[i] === "--output") out = args[++i] ?? usage("-o needs a file");
  else if (args[i] === "--debug") debug = true;
  else usage(`unknown argument ${args[i]}`);
}
try {
  await build(args[1], resolve(out), debug);
} catch (e) {
  console.error(`wload-as: cannot build ${args[1]}: ${e && e.message ? e.message : e}`);
  process.exit(1);
}
