import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';
import { startHookline } from '../../src/app.js';
import { defaultSettings } from '../../src/config/settings.js';
import { HooklineClient } from '../../src/sdk/index.js';

/**
 * Secrets and keys never reach the logs, and API keys are stored hashed. A whole node runs at
 * `trace` with a pino logger that keeps every line, through a full flow (admin creates a project,
 * webhook configured, secret read and rotated twice, events failing, dead-lettered, retried,
 * redriven, replayed, requests with wrong keys), then the captured output is searched for every
 * key and secret the run used. The logger has no redaction of its own: nothing may rely on it.
 */

const token = (prefix: string) => `${prefix}${randomBytes(24).toString('base64url')}`;

describe('secrets and keys in logs and on disk', () => {
  it('no API key, admin key or webhook secret appears anywhere in the log output of a full run', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'trace' }, { write: (line: string) => void lines.push(line) });
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const apiKey = token('hk_default_');
    const adminKey = token('admin_');
    const wrongKey = token('hk_wrong_');
    const wrongAdminKey = token('admin_wrong_');

    let healthy = false;
    const receiver = await startReceiver({ respond: () => ({ status: healthy ? 204 : 500, body: 'receiver says no' }) });
    const node = await startHookline(
      defaultSettings({ dataDir: dir.path, port: 0, apiKey, adminKey, allowPrivateNetworks: true, retrySchedule: [0, 20], retryJitter: false, deliveryTimeoutMs: 500, logLevel: 'trace' }),
      { logger },
    );
    let closed = false;
    onTestFinished(() => (closed ? undefined : node.close()));
    const api = async (method: string, path: string, key: string | null, body?: unknown) => {
      const response = await fetch(`${node.url}${path}`, {
        method,
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return { status: response.status, body: (await response.json()) as any };
    };

    // Admin creates a project; its key is shown once.
    expect((await api('POST', '/admin/v1/projects', wrongAdminKey, { name: 'acme' })).status).toBe(401);
    expect((await api('POST', '/admin/v1/projects', apiKey, { name: 'acme' })).status).toBe(401);
    const created = await api('POST', '/admin/v1/projects', adminKey, { name: 'acme' });
    expect(created.status).toBe(201);
    const projectKey: string = created.body.apiKey;

    const secrets: string[] = [];
    for (const key of [apiKey, projectKey]) {
      const client = new HooklineClient({ baseUrl: node.url, apiKey: key });
      healthy = false;
      await client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] });
      secrets.push((await client.getSecret()).secret);
      secrets.push((await client.rotateSecret()).secret);
      secrets.push((await client.rotateSecret({ graceSeconds: 0 })).secret);
      receiver.secret = (await client.getSecret()).secret;

      // Two events fail every attempt and are dead-lettered; one is retried, the other redriven.
      const first = await client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
      const second = await client.sendEvent({ type: 'service.trigger.event', data: { n: 2 } });
      for (const { deliveryId } of [first, second]) {
        await waitFor(async () => (await client.getDelivery(deliveryId!)).status === 'dead_lettered', { message: 'dead-lettered' });
      }
      healthy = true;
      await client.retryDelivery(first.deliveryId!);
      expect((await client.redriveDeadLetters()).redriven).toBe(1);
      const replay = await client.replayEvent(first.id);
      for (const deliveryId of [first.deliveryId!, second.deliveryId!, replay.deliveryId]) {
        await waitFor(async () => (await client.getDelivery(deliveryId)).status === 'succeeded', { message: 'succeeded' });
      }
      for await (const delivery of client.listDeliveries({ limit: 2 })) expect(delivery.id).toMatch(/^dlv_/);
      expect((await api('GET', '/v1/webhook', wrongKey)).status).toBe(401);
      expect((await api('POST', '/v1/events', key, { type: 'nope' })).status).toBe(400);
    }
    expect(receiver.received.filter((delivery) => delivery.verified).length).toBeGreaterThanOrEqual(6);
    await node.close();
    closed = true;

    const output = lines.join('');
    // The run was logged at all levels the flow reaches: requests, dead letters, shutdown.
    expect(lines.length).toBeGreaterThan(50);
    expect(output).toMatch(/incoming request/);
    expect(output).toMatch(/delivery dead-lettered/);

    const forbidden = { apiKey, projectKey, adminKey, wrongKey, wrongAdminKey, ...Object.fromEntries(secrets.map((secret, index) => [`secret${index}`, secret])) };
    for (const [name, value] of Object.entries(forbidden)) {
      expect(output.includes(value), `${name} appears in the log`).toBe(false);
      // Nor the key material of a secret without its prefix.
      if (value.startsWith('whsec_')) expect(output.includes(value.slice('whsec_'.length)), `${name} (base64 part) appears in the log`).toBe(false);
    }
    expect(output).not.toMatch(/whsec_/);
    expect(output).not.toMatch(/Bearer /i);

    // API keys are stored only as SHA-256 hashes: not in the LMDB files, and looked up by hash.
    const files = Buffer.concat(readdirSync(dir.path).map((file) => readFileSync(join(dir.path, file))));
    for (const key of [apiKey, projectKey, adminKey]) expect(files.includes(key), `${key.slice(0, 10)}… on disk`).toBe(false);
    for (const key of [apiKey, projectKey]) expect(files.includes(createHash('sha256').update(key).digest('hex')), 'the key hash on disk').toBe(true);
  });

  it('the admin key comparison copes with any candidate length (constant-time compare of digests)', async () => {
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const node = await startHookline(defaultSettings({ dataDir: dir.path, port: 0, apiKey: 'k', adminKey: 'the-admin-key', logLevel: 'silent' }), { logger: pino({ level: 'silent' }) });
    onTestFinished(() => node.close());
    for (const candidate of ['x', 'the-admin-ke', 'the-admin-key2', 'a'.repeat(5000), 'the-admin-key'.toUpperCase()]) {
      expect(node.engine.isAdminKey(candidate)).toBe(false);
      const answer = await fetch(`${node.url}/admin/v1/projects`, { method: 'POST', headers: { authorization: `Bearer ${candidate}`, 'content-type': 'application/json' }, body: '{"name":"x"}' });
      expect(answer.status).toBe(401);
    }
    expect(node.engine.isAdminKey('the-admin-key')).toBe(true);
  });
});
