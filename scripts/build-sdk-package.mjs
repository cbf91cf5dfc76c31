#!/usr/bin/env node
// Assembles @hookline/sdk, the SDK's own package (packages/sdk), from the SDK files the main build
// already wrote (run by scripts/build.mjs after tsc and scripts/build-sdk-cjs.mjs, and by packages/sdk's
// prepack). Its source is the main package's src/sdk and src/signing, the very modules the server signs
// with, so `hookline/sdk` and `@hookline/sdk` are the same compiled files:
//   dist/esm  the ES modules tsc wrote that the entries (sdk/index, sdk/nats) reach, with their .d.ts;
//             unbundled, so the node:crypto backend stays the lazy import() that src/signing/backend.ts
//             keeps it for browsers and edge runtimes (WebCrypto there);
//   dist/cjs  scripts/build-sdk-cjs.mjs's CommonJS bundles and declarations, as `require` loads them.
// Source maps are left out (they point into this repository's src/). Every import outside these files
// must be a Node builtin or one of the package's optional peerDependencies (the NATS client and zod,
// for `@hookline/sdk/nats`): a server dependency reaching the SDK fails the build instead of shipping.
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const packageDir = join(root, 'packages', 'sdk');
const manifest = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8'));

/** The package's entries, as scripts/build-sdk-cjs.mjs names them under dist/cjs. */
const ENTRIES = ['sdk/index', 'sdk/nats'];
const SOURCE_MAP_COMMENT = /\n\/\/# sourceMappingURL=\S+\s*$/;

const allowedBare = new Set([...builtinModules, ...Object.keys(manifest.peerDependencies ?? {})]);
const isAllowedBare = (specifier) => specifier.startsWith('node:') || allowedBare.has(specifier);

/** Copies `file` (under `from`) into `to` without its source map comment; returns what it imports. */
async function copyWithoutMap(file, from, to) {
  const text = (await readFile(file, 'utf8')).replace(SOURCE_MAP_COMMENT, '\n');
  const target = join(to, relative(from, file));
  await mkdir(dirname(target), { recursive: true });
  await writeFile(target, text);
  return ts.preProcessFile(text, true, true).importedFiles.map(({ fileName }) => fileName);
}

function checkBare(file, specifier) {
  if (!isAllowedBare(specifier)) {
    throw new Error(`${relative(root, file)} imports "${specifier}": @hookline/sdk has no runtime dependencies (a Node builtin or a peerDependency of packages/sdk/package.json only)`);
  }
}

// Assembled beside dist/ and swapped in, so a pack running meanwhile never sees half of it.
const staging = join(packageDir, `.dist-${process.pid}`);
try {
  await assemble();
  const out = join(packageDir, 'dist');
  await rm(out, { recursive: true, force: true });
  await rename(staging, out);
} catch (error) {
  await rm(staging, { recursive: true, force: true });
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
}

/** Copies the ESM closure of the entries and the CommonJS build into `staging`, checking every bare import. */
async function assemble() {
  const pending = ENTRIES.flatMap((entry) => [join(dist, `${entry}.js`), join(dist, `${entry}.d.ts`)]);
  const copied = new Set();
  while (pending.length > 0) {
    const file = pending.pop();
    if (copied.has(file)) continue;
    copied.add(file);
    for (const specifier of await copyWithoutMap(file, dist, join(staging, 'esm'))) {
      if (!specifier.startsWith('.')) checkBare(file, specifier);
      else if (file.endsWith('.d.ts')) pending.push(resolve(dirname(file), specifier.replace(/\.js$/, '.d.ts')));
      else pending.push(resolve(dirname(file), specifier));
    }
  }

  // Nothing but the SDK is there: its bundles, their declarations, the `"type": "commonjs"` package.json.
  const cjs = join(dist, 'cjs');
  for (const entry of await readdir(cjs, { recursive: true, withFileTypes: true })) {
    const file = join(entry.parentPath, entry.name);
    if (!entry.isFile() || entry.name.endsWith('.map')) continue;
    for (const specifier of await copyWithoutMap(file, cjs, join(staging, 'cjs'))) {
      if (!specifier.startsWith('.')) checkBare(file, specifier);
    }
  }
}
