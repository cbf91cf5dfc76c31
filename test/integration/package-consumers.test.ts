import { cpSync, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { initProject, packWithoutScripts, run, succeed } from '../helpers/npm-project.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * The package as another project gets it: `npm pack`, then `npm install <tarball>` from the registry
 * into a fresh `npm init -y` folder (CommonJS, as npm makes it), used from plain CommonJS, plain ESM
 * and TypeScript (`module: nodenext`, `skipLibCheck: false`, no @types/node, no @nats-io installed).
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The repository installed or run in place (a directory dependency, `npx` inside it). */
const REPO = ROOT;
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const work = makeTempDir('hookline-consumer-');
const consumer = join(work.path, 'consumer');

let installOutput = '';

beforeAll(() => {
  ensureBuilt();
  const tarball = packWithoutScripts(ROOT, work.path);
  initProject(consumer);
  installOutput = succeed('npm', ['install', join(work.path, tarball)], consumer);
}, 300_000);

// The folder holds a whole install (the unbuilt checkout's node_modules): long to remove on a busy machine.
afterAll(() => work.remove(), 120_000);

const SIGN_AND_VERIFY = `
  const secret = sdk.generateSecret();
  const body = '{"hello":"world"}';
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = await sdk.signWebhook({ id: 'msg_1', timestamp, body, secrets: secret });
  const verified = await sdk.verifyWebhookSignature({ id: 'msg_1', timestamp, signature, body, secret });
  const forged = await sdk.verifyWebhookSignature({ id: 'msg_1', timestamp, signature, body: body + ' ', secret });
  const client = new sdk.HooklineClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' });
  console.log(JSON.stringify({ verified, forged, client: typeof client.getStats, publishEvent: typeof nats.publishEvent }));
`;

/** When dist/ was last written: a build in place rewrites the CLI entry. */
const builtAt = () => statSync(join(REPO, 'dist', 'cli', 'main.js')).mtimeMs;

describe('the repository used in place builds nothing (it used to run a 19 s build each time)', () => {
  it('npm install <the repository directory> runs no build and links the built package', () => {
    const before = builtAt();
    const folder = join(work.path, 'directory-consumer');
    initProject(folder);
    // Foreground scripts: a lifecycle script of hookline, were there one, would print its banner here.
    const output = succeed('npm', ['install', '--foreground-scripts', REPO], folder);
    // Its prepare (scripts/prepare.mjs) runs, and finds dist/ as new as the sources.
    expect(output).toMatch(/> hookline@\S+ prepare/);
    expect(output).not.toMatch(/building it once|installing the dev dependencies/);
    expect(builtAt()).toBe(before);
    expect(run(process.execPath, ['-e', "require('hookline/sdk')"], folder).status).toBe(0);
  });

  it('npx hookline inside the repository runs the built CLI without rebuilding it', () => {
    const before = builtAt();
    // A fresh npm cache: npx may keep what it built before in ~/.npm/_npx, and a first run must not build either.
    const cache = join(work.path, 'npx-cache');
    const help = run('npx', ['--cache', cache, 'hookline', '--help'], REPO);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/serve/);
    expect(builtAt()).toBe(before);
  });
});

describe('an unbuilt checkout builds on install (issue 37: `npx hookline` answered "hookline: not found")', () => {
  it('npm install <a checkout with no dist/ nor node_modules> from another folder: its dev dependencies installed there (npm ci, whose prepare builds), npx hookline works', () => {
    // The files a checkout holds that the install and the build read (scripts/build.mjs's SOURCES).
    const checkout = join(work.path, 'unbuilt-checkout');
    mkdirSync(checkout);
    for (const entry of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts', 'src', 'web']) {
      cpSync(join(ROOT, entry), join(checkout, entry), { recursive: true });
    }
    const folder = join(work.path, 'unbuilt-consumer');
    initProject(folder);
    const output = succeed('npm', ['install', '--prefer-offline', '--foreground-scripts', checkout], folder);
    expect(output).toMatch(/installing the dev dependencies in .*unbuilt-checkout/);
    expect(existsSync(join(checkout, 'dist', '.build-stamp'))).toBe(true);
    const help = run('npx', ['--no-install', 'hookline', '--help'], folder);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/serve/);
    // `npx hookline` in the checkout itself (`npm ci && npx hookline --help`, the README's first step).
    const inPlace = run('npx', ['--no-install', 'hookline', '--help'], checkout);
    expect(inPlace.status, inPlace.stderr).toBe(0);
  }, 300_000);
});

describe('an installed hookline', () => {
  it('require("hookline/sdk") in a CommonJS project signs and verifies', () => {
    writeFileSync(join(consumer, 'consumer.js'), `const sdk = require('hookline/sdk');\nconst nats = require('hookline/sdk/nats');\n(async () => {${SIGN_AND_VERIFY}})();\n`);
    const result = run(process.execPath, ['consumer.js'], consumer);
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual({ verified: true, forged: false, client: 'function', publishEvent: 'function' });
    // The tarball holds its build: installing it built nothing, and its bin runs.
    expect(installOutput).not.toMatch(/> hookline@[^ ]+ (prepare|build|prepack)/);
    const help = run('npx', ['--no-install', 'hookline', '--help'], consumer);
    expect(help.status, help.stderr).toBe(0);
  });

  it('import from "hookline/sdk" in ES modules signs and verifies', () => {
    writeFileSync(join(consumer, 'consumer.mjs'), `import * as sdk from 'hookline/sdk';\nimport * as nats from 'hookline/sdk/nats';\n${SIGN_AND_VERIFY}`);
    const result = run(process.execPath, ['consumer.mjs'], consumer);
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual({ verified: true, forged: false, client: 'function', publishEvent: 'function' });
  });

  it('TypeScript nodenext and bundler, skipLibCheck false, without @nats-io: an .mts import and a .cts require type-check, receivers with no cast', () => {
    const usage = `import { HooklineClient, verifyWebhookSignature, type DeliveryStats, type RedriveResult } from 'hookline/sdk';
const client = new HooklineClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' });
export const preview: Promise<RedriveResult> = client.redriveDeadLetters({ dryRun: true });
export const stats: Promise<DeliveryStats> = client.getStats();
export const verified: Promise<boolean> = verifyWebhookSignature({ id: 'm', timestamp: 1, signature: 'v1,x', body: '{}', secret: 'whsec_x' });
// A receiver hands over the headers as its framework reads them, with no cast.
type IncomingHttpHeaders = Record<string, string | string[] | undefined>; // node:http's, without @types/node
export const fromNode = (headers: IncomingHttpHeaders, body: Uint8Array, secret: string): Promise<boolean> =>
  verifyWebhookSignature({ id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'], body, secret });
export const fromFetch = async (request: Request, secret: string): Promise<boolean> =>
  verifyWebhookSignature({ id: request.headers.get('webhook-id'), timestamp: request.headers.get('webhook-timestamp'), signature: request.headers.get('webhook-signature'), body: await request.text(), secret });
`;
    // In a .cts, nodenext compiles this import to require(): it resolves the package's `require` condition.
    writeFileSync(join(consumer, 'typed.mts'), usage);
    writeFileSync(join(consumer, 'typed.cts'), usage);
    // A misuse must still be caught: the declarations are really read, not silently `any`.
    writeFileSync(join(consumer, 'misuse.cts'), `import { HooklineClient } from 'hookline/sdk';\nexport const wrong: number = new HooklineClient({ baseUrl: 'x', apiKey: 'k' }).getStats();\n`);
    writeFileSync(join(consumer, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', strict: true, skipLibCheck: false, noEmit: true }, files: ['typed.mts', 'typed.cts'] }));
    writeFileSync(join(consumer, 'tsconfig.misuse.json'), JSON.stringify({ extends: './tsconfig.json', files: ['misuse.cts'] }));
    // Bundlers' resolution (Vite, esbuild, webpack projects): the `import` condition's declarations.
    writeFileSync(join(consumer, 'tsconfig.bundler.json'), JSON.stringify({ extends: './tsconfig.json', compilerOptions: { module: 'esnext', moduleResolution: 'bundler', target: 'es2022' } }));
    // A consumer that never publishes over NATS need not have it (pnpm, or a bundler's own install).
    rmSync(join(consumer, 'node_modules', '@nats-io'), { recursive: true, force: true });
    expect(existsSync(join(consumer, 'node_modules', '@types', 'node'))).toBe(false);

    const clean = run(process.execPath, [TSC, '-p', 'tsconfig.json'], consumer);
    expect(`${clean.stdout}${clean.stderr}`).toBe('');
    expect(clean.status).toBe(0);

    const bundler = run(process.execPath, [TSC, '-p', 'tsconfig.bundler.json'], consumer);
    expect(`${bundler.stdout}${bundler.stderr}`).toBe('');
    expect(bundler.status).toBe(0);

    const misuse = run(process.execPath, [TSC, '-p', 'tsconfig.misuse.json'], consumer);
    expect(misuse.stdout).toMatch(/misuse\.cts.*error TS2322.*Promise<DeliveryStats>/);
    // Three whole type-checks, 7 s on an idle 2-core machine: 42 s measured beside CI's other suites.
  }, 120_000);
});
