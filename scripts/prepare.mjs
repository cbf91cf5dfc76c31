#!/usr/bin/env node
// npm's `prepare` (package.json): `npm ci` / `npm install` in the repository, `npm install <this
// folder>` and `npm install git+…` in another project leave a built dist/, so `npx hookline` works
// (README, quick start). It builds only when dist/ is missing or older than a source (scripts/build.mjs
// --if-stale): a built checkout is linked as it is, in well under a second.
//
// The build needs the dev dependencies (tsc, esbuild, preact). A git install has them (npm installs
// them in its clone before `prepare`); a folder another project installs may not, so they are
// installed in that folder first, as `npm ci` there would. A production install of the repository
// itself (`npm ci --omit=dev`) that finds no dist/ says so and leaves it at that. Where scripts/ is
// absent (the Dockerfile's dependency layer, /opt/hookline in the README's systemd steps) package.json
// skips this script.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildIsStale, build } from './build.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const hasDevDependencies = () => existsSync(join(root, 'node_modules', 'typescript', 'bin', 'tsc'));

/** The npm settings an installing npm hands its scripts, less those about where and what to install. */
function nestedNpmEnv() {
  const kept = /^npm_config_(registry|cache|cafile|ca|proxy|https_proxy|noproxy|userconfig|globalconfig|strict_ssl|prefer_offline|offline|fetch_.*|@.*:registry|\/\/.*)$/i;
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) || kept.test(name)));
}

try {
  if (!buildIsStale()) process.exit(0);
  if (!hasDevDependencies()) {
    // The project npm is installing into: this folder itself, or another one that depends on it.
    const installingInto = process.env.npm_config_local_prefix ? resolve(process.env.npm_config_local_prefix) : root;
    if (installingInto === root) {
      console.error('hookline: dist/ is not built and the dev dependencies are not installed (--omit=dev?): run `npm ci` here, then `npx hookline` works');
      process.exit(0);
    }
    console.error(`hookline: installing the dev dependencies in ${root} to build dist/ (npm ${existsSync(join(root, 'package-lock.json')) ? 'ci' : 'install'})…`);
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    // Its own `prepare` (this script, the dev dependencies now there) builds dist/.
    const install = spawnSync(npm, [existsSync(join(root, 'package-lock.json')) ? 'ci' : 'install', '--include=dev', '--no-audit', '--no-fund'], { cwd: root, env: nestedNpmEnv(), stdio: ['ignore', 'inherit', 'inherit'] });
    if (install.status !== 0) throw new Error(`installing the dev dependencies in ${root} failed (npm status ${install.status})`);
    if (!buildIsStale()) process.exit(0);
  }
  console.error('hookline: dist/ is missing or older than the sources; building it once (npm run build)…');
  build();
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
}
