// Writes docs/openapi.json from the zod schemas in src/http (run by `npm run openapi`).
// test/unit/openapi-document.test.ts fails while the checked-in copy is stale. The module is
// bundled on the fly with esbuild (packages stay external) instead of running a build, so nothing
// under dist/ is rewritten beneath a running server.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url);
const cacheDir = new URL('node_modules/.cache/hookline/', root);
mkdirSync(cacheDir, { recursive: true });
const bundle = new URL('openapi.mjs', cacheDir);
await build({ entryPoints: [new URL('src/http/openapi.ts', root).pathname], bundle: true, packages: 'external', platform: 'node', format: 'esm', outfile: bundle.pathname, logLevel: 'error' });
const { openApiJson } = await import(bundle.href);

const target = new URL('docs/openapi.json', root);
const after = openApiJson();
let before = '';
try {
  before = readFileSync(target, 'utf8');
} catch {
  // first run: no copy yet
}
if (after === before) {
  console.log('docs/openapi.json is up to date');
} else {
  writeFileSync(target, after);
  console.log('docs/openapi.json was regenerated from src/http');
}
