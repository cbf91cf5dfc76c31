import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttemptRequests } from '../../src/actors/attempt-request.js';
import { generateSecret } from '../../src/signing/secret.js';
import type { WebhookRecord } from '../../src/store/records.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { initProject, packWithoutScripts, run, succeed } from '../helpers/npm-project.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * @hookline/sdk as a consumer gets it (issue 37: "an SDK-only install pulls no server dependency"):
 * packages/sdk packed, the tarball installed offline into a fresh `npm init -y` folder (so nothing can
 * come from a registry), then used from CommonJS, ES modules and TypeScript to verify a delivery
 * signed by the server's own signer (AttemptRequests, what every attempt sends).
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PACKAGE_DIR = join(ROOT, 'packages', 'sdk');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const work = makeTempDir('hookline-sdk-package-');
const consumer = join(work.path, 'consumer');
const installed = join(consumer, 'node_modules', '@hookline', 'sdk');

/** The server's dependencies (package.json), none of which an SDK install may bring. */
const SERVER_DEPENDENCIES = Object.keys((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies);

function bytesUnder(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((total, entry) => total + bytesUnder(join(path, entry)), 0);
}

let installMs = 0;

beforeAll(() => {
  ensureBuilt(); // packages/sdk/dist is its last step
  const tarball = packWithoutScripts(PACKAGE_DIR, work.path);
  initProject(consumer);
  const startedAt = performance.now();
  // Offline: whatever the tarball asked for beyond itself would fail the install, not be fetched.
  succeed('npm', ['install', '--offline', join(work.path, tarball)], consumer);
  installMs = performance.now() - startedAt;
}, 120_000);

afterAll(() => work.remove());

/** A delivery as the server signs it, during a rotation: the new secret and the old one both sign. */
function serverSignedDelivery(): { id: string; timestamp: string; signature: string; body: string; newSecret: string; oldSecret: string } {
  const [newSecret, oldSecret] = [generateSecret(), generateSecret()];
  const now = Date.now();
  const webhook: WebhookRecord = {
    callbackUrl: 'http://127.0.0.1:9/webhooks',
    state: 'active',
    eventTypes: ['service.trigger.event'],
    createdAt: now,
    updatedAt: now,
    secrets: [
      { secret: newSecret, createdAt: now, expiresAt: null },
      { secret: oldSecret, createdAt: now - 1000, expiresAt: now + 60_000 },
    ],
    failingSince: null,
    disabledAt: null,
    disabledReason: null,
  };
  const body = JSON.stringify({ type: 'service.trigger.event', data: { hello: 'wörld' } });
  const request = new AttemptRequests().build(webhook, () => webhook, 'dlv_sdk_package', new TextEncoder().encode(body), () => now);
  const headers = typeof request.headers === 'function' ? request.headers() : request.headers;
  return { id: headers['webhook-id']!, timestamp: headers['webhook-timestamp']!, signature: headers['webhook-signature']!, body, newSecret, oldSecret };
}

/** Verifies the DELIVERY (JSON in the environment) under each secret and with a changed body; prints the answers. */
const VERIFY = `
  const delivery = JSON.parse(process.env.DELIVERY);
  const check = (secret, body = delivery.body) => sdk.verifyWebhookSignature({ ...delivery, body, secret });
  const answers = {
    newSecret: await check(delivery.newSecret),
    oldSecret: await check(delivery.oldSecret),
    changedBody: await check(delivery.newSecret, delivery.body + ' '),
    otherSecret: await check(sdk.generateSecret()),
    client: typeof new sdk.HooklineClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' }).getStats,
    publishEvent: typeof nats.publishEvent,
  };
  console.log(JSON.stringify(answers));
`;
const EXPECTED = { newSecret: true, oldSecret: true, changedBody: false, otherSecret: false, client: 'function', publishEvent: 'function' };

describe('an SDK-only install (npm install of the packed packages/sdk, offline)', () => {
  it('holds @hookline/sdk alone: no dependency, none of the server, a few hundred kilobytes', () => {
    expect(readdirSync(join(consumer, 'node_modules')).filter((name) => name !== '.package-lock.json')).toEqual(['@hookline']);
    expect(readdirSync(join(consumer, 'node_modules', '@hookline'))).toEqual(['sdk']);
    const lock = JSON.parse(readFileSync(join(consumer, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    expect(Object.keys(lock.packages).filter((path) => path !== '')).toEqual(['node_modules/@hookline/sdk']);
    for (const name of SERVER_DEPENDENCIES) expect(existsSync(join(consumer, 'node_modules', name)), name).toBe(false);

    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.optionalDependencies).toBeUndefined();
    // The NATS client is the consumer's own, for @hookline/sdk/nats alone: never installed with the SDK.
    expect(Object.values(manifest.peerDependenciesMeta as Record<string, { optional: boolean }>).every((meta) => meta.optional)).toBe(true);

    const bytes = bytesUnder(installed);
    expect(bytes).toBeLessThan(256 * 1024);
    console.info(`@hookline/sdk: installed in ${Math.round(installMs)} ms, ${(bytes / 1024).toFixed(1)} KiB in ${readdirSync(installed, { recursive: true }).length} entries`);
  });

  it('require("@hookline/sdk") verifies what the server signed, and refuses a changed body', () => {
    writeFileSync(join(consumer, 'consumer.cjs'), `const sdk = require('@hookline/sdk');\nconst nats = require('@hookline/sdk/nats');\n(async () => {${VERIFY}})();\n`);
    const result = run(process.execPath, ['consumer.cjs'], consumer, { DELIVERY: JSON.stringify(serverSignedDelivery()) });
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual(EXPECTED);
  });

  it('import from "@hookline/sdk" verifies what the server signed, and refuses a changed body', () => {
    writeFileSync(join(consumer, 'consumer.mjs'), `import * as sdk from '@hookline/sdk';\nimport * as nats from '@hookline/sdk/nats';\n${VERIFY}`);
    const result = run(process.execPath, ['consumer.mjs'], consumer, { DELIVERY: JSON.stringify(serverSignedDelivery()) });
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual(EXPECTED);
  });

  it('TypeScript (nodenext, skipLibCheck false, no @types/node) reads its types from an .mts import and a .cts require', () => {
    const usage = `import { HooklineClient, signWebhook, verifyWebhookSignature, type DeliveryStats } from '@hookline/sdk';
export const stats: Promise<DeliveryStats> = new HooklineClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' }).getStats();
export const signed: Promise<string> = signWebhook({ id: 'm', timestamp: 1, body: '{}', secret: 'whsec_x' });
export const verified: Promise<boolean> = verifyWebhookSignature({ id: 'm', timestamp: 1, signature: 'v1,x', body: '{}', secret: 'whsec_x' });
// @ts-expect-error: the declarations are really read (were they any, this line would be an unused expectation)
export const wrong: number = verifyWebhookSignature({ id: 'm', timestamp: 1, signature: 'v1,x', body: '{}', secret: 'whsec_x' });
`;
    writeFileSync(join(consumer, 'typed.mts'), usage);
    writeFileSync(join(consumer, 'typed.cts'), usage);
    writeFileSync(join(consumer, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'nodenext', strict: true, skipLibCheck: false, noEmit: true, types: [] }, files: ['typed.mts', 'typed.cts'] }));
    const result = run(process.execPath, [TSC, '-p', 'tsconfig.json'], consumer);
    expect(`${result.stdout}${result.stderr}`).toBe('');
    expect(result.status).toBe(0);
  }, 60_000);
});
