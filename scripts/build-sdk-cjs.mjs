#!/usr/bin/env node
// Builds the SDK for CommonJS consumers into dist/cjs (run by scripts/build.mjs, after tsc):
// `require('hookline/sdk')` must work on Node 20, where require() of an ES module is unavailable
// (and on 22/24 without the experimental warning some releases print). esbuild bundles each SDK
// entry into one CommonJS file; the .d.ts files tsc wrote are copied beside them under a
// package.json saying `"type": "commonjs"`, so TypeScript (`module: nodenext`) reads them as
// CommonJS declarations for a `require` and needs no second declaration emit.
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import ts from 'typescript';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const outdir = join(dist, 'cjs');

/** The SDK's public entries, each a subpath export of the package (`hookline/sdk`, `hookline/sdk/nats`). */
const ENTRIES = ['sdk/index', 'sdk/nats'];

await mkdir(outdir, { recursive: true });
await writeFile(join(outdir, 'package.json'), '{ "type": "commonjs" }\n');
await build({
  absWorkingDir: root,
  entryPoints: ENTRIES.map((entry) => ({ in: `src/${entry}.ts`, out: entry })),
  outdir,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  // The NATS client stays the consumer's own install (one connection type, one copy of the client).
  packages: 'external',
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
});

// Every declaration file the entries' declarations reach through relative imports.
const pending = ENTRIES.map((entry) => join(dist, `${entry}.d.ts`));
const copied = new Set();
while (pending.length > 0) {
  const file = pending.pop();
  if (copied.has(file)) continue;
  copied.add(file);
  const target = join(outdir, relative(dist, file));
  await mkdir(dirname(target), { recursive: true });
  await copyFile(file, target);
  const { importedFiles } = ts.preProcessFile(await readFile(file, 'utf8'), true, true);
  for (const { fileName } of importedFiles) {
    if (fileName.startsWith('.')) pending.push(resolve(dirname(file), fileName.replace(/\.js$/, '.d.ts')));
  }
}
