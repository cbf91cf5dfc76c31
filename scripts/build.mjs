#!/usr/bin/env node
// The one build of the package, run by `npm run build`, by `npm pack`/`npm publish` (prepack), by an
// install of the repository, a folder or a git URL (prepare, scripts/prepare.mjs: when stale) and,
// only when dist/ is missing or stale, by `npm start` (prestart) and the tests that run dist/:
//   1. tsc: src/ → dist/ (ESM, with .d.ts), what the CLI, the server and `import 'hookline/sdk'` load;
//   2. the dashboard: web/ → dist/ui (scripts/build-ui.mjs);
//   3. the SDK for CommonJS consumers (scripts/build-sdk-cjs.mjs): dist/cjs, what `require('hookline/sdk')`
//      loads on every supported Node without relying on require(esm);
//   4. in a checkout, @hookline/sdk (scripts/build-sdk-package.mjs): packages/sdk/dist, the SDK as its own
//      package with no dependencies, assembled from the files of 1 and 3; skipped where there is no
//      packages/sdk (the Dockerfile's build stage, which builds the server alone).
// Then it stamps dist/.build-stamp with the time the build started, so a source saved during the build
// still counts as newer than the build.
//
// Usage: node scripts/build.mjs [--if-stale] [--allow-type-errors]
//   --if-stale           build only when the stamp is missing or older than a source (prestart)
//   --allow-type-errors  accept tsc's status 2 (errors reported, every output still written); for
//                        tests run while some unrelated file is mid-edit
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, 'dist', '.build-stamp');

/** The manifest of @hookline/sdk (packages/sdk): its peerDependencies are the imports the SDK may keep. */
const SDK_PACKAGE = 'packages/sdk/package.json';

/** What the build reads: a change to any of these makes dist/ stale. */
const SOURCES = ['src', 'web', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs', 'scripts/build-ui.mjs', 'scripts/build-sdk-cjs.mjs', 'scripts/build-sdk-package.mjs', SDK_PACKAGE];

/** tsc's exit status when it reported type errors but still wrote every output. */
const TSC_ERRORS_OUTPUTS_GENERATED = 2;

function newestMtime(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return 0; // an installed package has no web/ or tsconfig: nothing there to be newer than dist/
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** True when dist/ was never built by this script, or a source changed since the build started. */
export function buildIsStale() {
  let built;
  try {
    built = statSync(stamp).mtimeMs;
  } catch {
    return true;
  }
  return SOURCES.some((source) => newestMtime(join(root, source)) > built);
}

function run(label, args) {
  const result = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8' });
  return { label, status: result.status, output: `${result.stdout ?? ''}\n${result.stderr ?? ''}`.trim() };
}

/**
 * Builds every output (see the top of this file) and stamps dist/. Throws when a step fails; with
 * `allowTypeErrors`, tsc's type errors are returned as a warning instead when tsc still emitted.
 * @returns {{ warnings: string[] }}
 */
export function build({ allowTypeErrors = false } = {}) {
  const startedAt = new Date();
  const warnings = [];
  const tsc = run('tsc', [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json']);
  if (tsc.status === TSC_ERRORS_OUTPUTS_GENERATED && allowTypeErrors) warnings.push(`dist was built, with type errors:\n${tsc.output}`);
  else if (tsc.status !== 0) throw new Error(`building dist failed (tsc status ${tsc.status}):\n${tsc.output}`);
  const steps = [['dashboard', 'build-ui.mjs'], ['sdk-cjs', 'build-sdk-cjs.mjs']];
  if (existsSync(join(root, SDK_PACKAGE))) steps.push(['@hookline/sdk', 'build-sdk-package.mjs']);
  for (const [label, script] of steps) {
    const step = run(label, [join(root, 'scripts', script)]);
    if (step.status !== 0) throw new Error(`building ${step.label} failed (status ${step.status}):\n${step.output}`);
  }
  mkdirSync(dirname(stamp), { recursive: true });
  writeFileSync(stamp, `${startedAt.toISOString()}\n`);
  utimesSync(stamp, startedAt, startedAt);
  return { warnings };
}

/** Builds when stale (see `buildIsStale`); returns whether it built. */
export function ensureBuilt(options = {}) {
  if (!buildIsStale()) return { built: false, warnings: [] };
  return { built: true, ...build(options) };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const args = process.argv.slice(2);
  const options = { allowTypeErrors: args.includes('--allow-type-errors') };
  try {
    if (args.includes('--if-stale')) {
      if (!buildIsStale()) process.exit(0);
      // The full build takes a while: say why nothing else is printed meanwhile.
      console.error('hookline: dist/ is missing or older than the sources; building it once (npm run build)…');
    }
    for (const warning of build(options).warnings) console.error(warning);
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  }
}
