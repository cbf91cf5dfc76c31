import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Hookline } from '../../src/app.js';
import { defaultSettings } from '../../src/config/settings.js';
import { HooklineClient } from '../../src/sdk/index.js';
import { partitionOf } from '../../src/sdk/partition.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { clusterStreams, uniqueClusterNames } from '../helpers/cluster.js';
import { API_KEY, waitForDeliveryStatus } from '../helpers/hookline.js';
import { SHARED_NATS_URL, connectNats, deleteStreams } from '../helpers/nats.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Cluster mode: HOOKLINE_MAX_WAITING_PER_PROJECT is counted per project on the node that owns it, so a recovery call is checked on the node
 * that owns the project, where its live deliveries are; called on another node, it is forwarded
 * there, and its 503 `overloaded` comes back with its code, details and Retry-After.
 */

const PARTITIONS = 4;

describe('recovery limits in a cluster', () => {
  let startBuiltHookline: (settings: ReturnType<typeof defaultSettings>) => Promise<Hookline>;
  const cleanups: Array<() => Promise<unknown> | void> = [];

  beforeAll(async () => {
    ensureBuilt();
    // From dist/, whose lease worker is built.
    ({ startHookline: startBuiltHookline } = (await import('../../dist/app.js')) as unknown as { startHookline: typeof startBuiltHookline });
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it('retry, redrive and replay sent to a node that does not own the project are refused by the owner, 503 overloaded intact', async () => {
    const names = uniqueClusterNames();
    const nats = await connectNats(SHARED_NATS_URL);
    cleanups.push(() => nats.close());
    cleanups.push(() => deleteStreams(nats, clusterStreams(names)));
    const start = async (nodeId: string) => {
      const dir = makeTempDir();
      cleanups.push(() => dir.remove());
      const settings = defaultSettings({ ...names, natsUrl: SHARED_NATS_URL, nodeId, cluster: true, partitions: PARTITIONS, leaseMs: 2_000, dataDir: dir.path, port: 0, apiKey: API_KEY, allowPrivateNetworks: true, retrySchedule: [0, 50, 100], retryJitter: false, deliveryTimeoutMs: 500, logLevel: 'silent', maxWaitingPerProject: 1 });
      const node = await startBuiltHookline(settings);
      cleanups.push(() => node.close());
      return node;
    };
    const served = async (node: Hookline) => ((await (await fetch(`${node.url}/healthz`)).json()) as { cluster: { partitions: number[] } }).cluster.partitions;
    const first = await start('node-a');
    await waitFor(async () => (await served(first)).length === PARTITIONS, { timeoutMs: 15_000, message: 'every partition served by the first node' });
    const second = await start('node-b');
    await waitFor(async () => (await served(first)).length > 0 && (await served(second)).length > 0 && (await served(first)).length + (await served(second)).length === PARTITIONS, { timeoutMs: 20_000, message: 'the partitions shared' });
    const ownsDefault = (await served(first)).includes(partitionOf('default', PARTITIONS));
    const [owner, other] = ownsDefault ? [first, second] : [second, first];
    const viaOwner = new HooklineClient({ baseUrl: owner.url, apiKey: API_KEY });
    const api = (path: string, body?: unknown) => fetch(`${other.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${API_KEY}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });

    // On the owner: a dead letter, then one delivery held by a paused webhook, which fills its budget of one.
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    cleanups.push(() => receiver.close());
    await viaOwner.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] });
    const dead = await viaOwner.sendEvent({ id: 'evt_dead', type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(viaOwner, dead.deliveryId!, 'dead_lettered');
    await viaOwner.configureWebhook({ callbackUrl: receiver.url, status: 'paused', eventTypes: ['service.trigger.event'] });
    await waitFor(async () => (await viaOwner.sendEvent({ type: 'service.trigger.event', data: {} }).then(() => true, () => false)), { message: 'the held delivery taken' });

    for (const [path, body] of [[`/v1/logs/webhook-deliveries/${dead.deliveryId}/retry`, undefined], ['/v1/logs/webhook-deliveries/redrive', {}], ['/v1/events/evt_dead/replay', undefined]] as const) {
      const answer = await api(path, body);
      const text = await answer.text();
      expect(answer.status, `${path}: ${text}`).toBe(503);
      expect(JSON.parse(text).error.code).toBe('overloaded');
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      if (path.endsWith('redrive')) expect(JSON.parse(text).error.details).toEqual([expect.objectContaining({ reqId: expect.any(String) }), expect.objectContaining({ wouldRedrive: 1, room: 0 })]);
    }
    expect(await (await api('/v1/logs/webhook-deliveries/redrive', { dryRun: true })).json()).toEqual({ redriven: 0, wouldRedrive: 1, fits: false });
    expect((await viaOwner.getDelivery(dead.deliveryId!)).status).toBe('dead_lettered');
  });
});
