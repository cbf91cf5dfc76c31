import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { API_KEY, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import type { TestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';
import { isBlockedAddress } from '../../src/transport/address-guard.js';

/**
 * The SSRF guard end to end (HOOKLINE_ALLOW_PRIVATE_NETWORKS=0): PUT refuses callback URLs naming a
 * blocked address, and at send time every address a callback host resolves to is checked, so a
 * DNS name pointing at loopback fails its attempts with `blocked_address` and follows the retry path.
 */

const GUARDED = { allowPrivateNetworks: false, retrySchedule: [0, 30, 60], deliveryTimeoutMs: 300 } as const;

/** A name from /etc/hosts (other than localhost) that resolves to a blocked address, if the machine has one. */
function hostsAliasOfLoopback(): string | null {
  let hosts = '';
  try {
    hosts = readFileSync('/etc/hosts', 'utf8');
  } catch {
    return null;
  }
  for (const line of hosts.split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/);
    if (!address || !isBlockedAddress(address)) continue;
    const alias = names.find((name) => name !== 'localhost' && !name.endsWith('.localhost') && !name.includes('localhost') && /^[a-z0-9.-]+$/i.test(name));
    if (alias) return alias;
  }
  return null;
}

/**
 * The error codes of a delivery's attempts as stored in LMDB, once `count` are there: the API shows
 * a step as soon as it is made, and its commit lands a moment later.
 */
function storedAttemptCodes(hookline: TestHookline, projectId: string, deliveryId: string, count: number) {
  return waitFor(
    () => {
      const attempts = hookline.node.engine.store.getDelivery(projectId, deliveryId)?.attemptLog ?? [];
      return attempts.length === count ? attempts.map((attempt) => attempt.errorCode) : null;
    },
    { message: `${count} attempts of ${deliveryId} stored` },
  );
}

describe('SSRF guard on PUT /v1/webhook', () => {
  const refused = [
    'http://127.0.0.1/hooks',
    'http://127.0.0.1:8080/hooks',
    'http://127.1/hooks',
    'http://2130706433/hooks',
    'http://0x7f000001/hooks',
    'http://0177.0.0.1/hooks',
    'http://localhost/hooks',
    'http://LOCALHOST./hooks',
    'http://tenant.localhost/hooks',
    'http://10.0.0.1/hooks',
    'http://172.16.0.1/hooks',
    'http://172.31.255.254/hooks',
    'http://192.168.1.1/hooks',
    'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
    'http://100.64.0.1/hooks',
    'http://100.127.255.254/hooks',
    'http://224.0.0.1/hooks',
    'http://239.255.255.250:1900/hooks',
    'http://0.0.0.0/hooks',
    'http://255.255.255.255/hooks',
    'http://[::1]/hooks',
    'http://[0:0:0:0:0:0:0:1]/hooks',
    'http://[::]/hooks',
    'http://[::ffff:127.0.0.1]/hooks',
    'http://[::ffff:7f00:1]/hooks',
    'http://[::ffff:169.254.169.254]/hooks',
    'http://[::ffff:a9fe:a9fe]/hooks',
    'http://[::ffff:10.0.0.1]/hooks',
    'http://[fc00::1]/hooks',
    'http://[fd12:3456::1]/hooks',
    'http://[fe80::1]/hooks',
    'http://[ff02::1]/hooks',
    'https://[64:ff9b::a9fe:a9fe]/hooks',
  ];

  it('answers 400 validation_failed naming body.callbackUrl for every blocked literal, in every spelling', async () => {
    const hookline = await startTestHookline(GUARDED);
    const accepted: string[] = [];
    for (const callbackUrl of refused) {
      const answer = await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl, status: 'active', eventTypes: ['service.trigger.event'] } });
      if (answer.status !== 400) {
        accepted.push(`${callbackUrl} → ${answer.status}`);
        continue;
      }
      expect(answer.body.error.code).toBe('validation_failed');
      expect(answer.body.error.details).toContainEqual({ path: 'body.callbackUrl', message: 'address not allowed' });
      expect(answer.body.error.message).toMatch(/HOOKLINE_ALLOW_PRIVATE_NETWORKS/);
    }
    expect(accepted, 'blocked callback URLs that PUT accepted').toEqual([]);
    // Nothing was configured by any of them.
    expect((await hookline.api('GET', '/v1/webhook')).status).toBe(404);
  });

  it('accepts only http and https, and public hosts', async () => {
    const hookline = await startTestHookline(GUARDED);
    for (const callbackUrl of ['ftp://example.com/hooks', 'file:///etc/passwd', 'gopher://example.com/', 'ws://example.com/hooks', 'javascript:alert(1)', 'data:text/plain,hi', '//example.com/hooks', 'example.com/hooks']) {
      const answer = await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl, status: 'active', eventTypes: ['service.trigger.event'] } });
      expect(answer.status, callbackUrl).toBe(400);
      expect(answer.body.error.code).toBe('validation_failed');
    }
    for (const callbackUrl of ['https://example.com/hooks', 'http://93.184.216.34:8080/hooks', 'https://[2606:4700:4700::1111]/hooks', 'https://localhost.example.com/hooks']) {
      const answer = await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl, status: 'paused', eventTypes: ['service.trigger.event'] } });
      expect(answer.status, callbackUrl).toBe(200);
      expect(answer.body.callbackUrl).toBe(callbackUrl);
    }
  });

  it('lets loopback through when HOOKLINE_ALLOW_PRIVATE_NETWORKS=1', async () => {
    const hookline = await startTestHookline({ ...GUARDED, allowPrivateNetworks: true });
    for (const callbackUrl of ['http://127.0.0.1:9/hooks', 'http://localhost:9/hooks', 'http://[::1]:9/hooks', 'http://10.0.0.1/hooks']) {
      const answer = await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl, status: 'paused', eventTypes: ['service.trigger.event'] } });
      expect(answer.status, callbackUrl).toBe(200);
    }
  });
});

describe('SSRF guard at send time', () => {
  /**
   * Configures project `projectId` straight through its actor (the PUT check is the first line;
   * this exercises the second), sends one event and waits until it is dead-lettered.
   */
  async function deliverThroughGuard(hookline: TestHookline, projectId: string, apiKey: string, callbackUrl: string) {
    await hookline.node.engine.actorFor(projectId).configure({ callbackUrl, status: 'active', eventTypes: ['service.trigger.event'] });
    const client = hookline.clientFor(apiKey);
    const { deliveryId } = await client.sendEvent({ type: 'service.trigger.event', data: { to: callbackUrl } });
    const detail = await waitForDeliveryStatus(client, deliveryId!, 'dead_lettered');
    return { client, deliveryId: deliveryId!, detail };
  }

  it('fails every attempt to a host that resolves to loopback (or names it) with blocked_address, along the retry path; the receiver sees nothing', async () => {
    const receiver = await startReceiver();
    const port = new URL(receiver.url).port;
    const hookline = await startTestHookline(GUARDED);
    const targets = [`http://localhost:${port}/hooks`, `http://LOCALHOST:${port}/hooks`, `http://127.0.0.1:${port}/hooks`, `http://[::ffff:127.0.0.1]:${port}/hooks`, `http://[::1]:${port}/hooks`];
    for (const [index, callbackUrl] of targets.entries()) {
      const apiKey = `ssrf-key-${index}`;
      const { projectId } = await hookline.node.engine.createProject(`ssrf-${index}`, apiKey);
      const { detail, deliveryId } = await deliverThroughGuard(hookline, projectId, apiKey, callbackUrl);

      expect(detail.attempts, callbackUrl).toBe(3);
      // The retry path: failed → retrying → delivering, twice, then dead-lettered.
      const path = detail.transitions.map((transition) => transition.to);
      expect(path.filter((status) => status === 'retrying')).toHaveLength(2);
      expect(path.at(-1)).toBe('dead_lettered');
      for (const attempt of detail.attemptLog) {
        expect(attempt.statusCode).toBeNull();
        expect(attempt.error, callbackUrl).toMatch(/HOOKLINE_ALLOW_PRIVATE_NETWORKS=0/);
      }
      expect(await storedAttemptCodes(hookline, projectId, deliveryId, 3)).toEqual(['blocked_address', 'blocked_address', 'blocked_address']);
    }
    expect(receiver.received).toHaveLength(0);
    const metrics = await (await fetch(`${hookline.url}/metrics`)).text();
    expect(metrics).toMatch(/hookline_delivery_attempts_total\{outcome="blocked_address"\} 15/);
  });

  const alias = hostsAliasOfLoopback();
  it.runIf(alias !== null)(`a DNS name other than localhost that resolves to loopback (${alias ?? 'none in /etc/hosts'}) passes PUT and is refused at send time`, async () => {
    const receiver = await startReceiver();
    const hookline = await startTestHookline(GUARDED);
    const callbackUrl = `http://${alias}:${new URL(receiver.url).port}/hooks`;
    const put = await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl, status: 'active', eventTypes: ['service.trigger.event'] } });
    expect(put.status).toBe(200);
    const { deliveryId } = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const detail = await waitForDeliveryStatus(hookline.client, deliveryId!, 'dead_lettered');
    expect(detail.attemptLog.every((attempt) => /resolves to/.test(attempt.error ?? ''))).toBe(true);
    expect(await storedAttemptCodes(hookline, 'default', deliveryId!, 3)).toEqual(['blocked_address', 'blocked_address', 'blocked_address']);
    expect(receiver.received).toHaveLength(0);
  });

  it('a restart with HOOKLINE_ALLOW_PRIVATE_NETWORKS=0 warns about a stored private callback at start, and the dead-letter line says why', async () => {
    const receiver = await startReceiver();
    const port = new URL(receiver.url).port;
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const open = await startTestHookline({ ...GUARDED, allowPrivateNetworks: true, dataDir: dir.path });
    await open.client.configureWebhook({ callbackUrl: `http://user:pw@127.0.0.1:${port}/hooks`, status: 'active', eventTypes: ['service.trigger.event'] });
    await open.close();

    const written: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void written.push(line) });
    const lines = () => written.map((line) => JSON.parse(line) as Record<string, unknown>);
    const guarded = await startTestHookline({ ...GUARDED, dataDir: dir.path }, { logger });
    expect(lines().find((line) => line.field === 'callbackUrl')).toMatchObject({
      level: 40,
      projectId: 'default',
      field: 'callbackUrl',
      host: `127.0.0.1:${port}`,
      state: 'active',
      msg: expect.stringMatching(/^project default: the stored callbackUrl points at 127\.0\.0\.1:\d+, a loopback, private or link-local address, and HOOKLINE_ALLOW_PRIVATE_NETWORKS is off: every attempt to it fails \(blocked_address\)/),
    });
    expect(written.join('')).not.toContain('pw@');

    const { deliveryId } = await guarded.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(guarded.client, deliveryId!, 'dead_lettered');
    const deadLetter = await waitFor(() => lines().find((line) => line.msg === 'delivery dead-lettered') ?? null, { message: 'the dead-letter line' });
    expect(deadLetter).toMatchObject({ projectId: 'default', deliveryId, attempts: 3, reason: '127.0.0.1 is an address callbacks may not reach (HOOKLINE_ALLOW_PRIVATE_NETWORKS=0)', errorCode: 'blocked_address' });
    expect(receiver.received).toHaveLength(0);
  });

  it('the same dead-lettered delivery succeeds once the node runs with HOOKLINE_ALLOW_PRIVATE_NETWORKS=1', async () => {
    const receiver = await startReceiver();
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const guarded = await startTestHookline({ ...GUARDED, dataDir: dir.path });
    const callbackUrl = `http://localhost:${new URL(receiver.url).port}/hooks`;
    const { deliveryId } = await deliverThroughGuard(guarded, 'default', API_KEY, callbackUrl);
    expect(receiver.received).toHaveLength(0);
    await guarded.close();

    const open = await startTestHookline({ ...GUARDED, allowPrivateNetworks: true, dataDir: dir.path });
    receiver.secret = (await open.client.getSecret()).secret;
    await open.client.retryDelivery(deliveryId);
    const detail = await waitForDeliveryStatus(open.client, deliveryId, 'succeeded');
    expect(detail.attempts).toBe(4);
    expect(receiver.byWebhookId(deliveryId)).toHaveLength(1);
    expect(receiver.received[0]!.verified).toBe(true);
  });
});
