#!/usr/bin/env node
// Builds the dashboard (web/) into static files in dist/ui, served by the node under /ui/.
// Run by `npm run build` (and so by `npm ci`). esbuild's binary ships in its npm package: no
// network, no build server. Type checking is tsc's job (`npm run typecheck` covers web/).
import { copyFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist', 'ui');

// Written in place (no clean first): a node or test serving dist/ui never sees it missing.
await mkdir(outdir, { recursive: true });
await build({
  absWorkingDir: root,
  // app.js and app.css: the stylesheet is shared with the server-rendered log page.
  entryPoints: [
    { in: 'web/main.tsx', out: 'app' },
    { in: 'web/styles.css', out: 'app' },
  ],
  outdir,
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2022', 'chrome111', 'firefox111', 'safari16'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  minify: true,
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
});
await copyFile(join(root, 'web', 'index.html'), join(outdir, 'index.html'));
