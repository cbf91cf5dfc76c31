import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../helpers/child-node.js';
import { startTestClusterForTest } from '../helpers/cluster.js';
import { ALL_TYPES } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Issue 15 in cluster mode: headers, filter, ordering and the operational URL and secret are part of
 * the webhook record, which the partition changelog carries whole; a new owner after kill -9 has
 * them all and acts on them. So are issue 35's delivery limits (`maxConcurrency`, `rateLimitPerSecond`)
 * and issue 38's `retrySchedule`, which the new owner's deliveries take their round from.
 */

beforeAll(() => ensureBuilt(), 120_000);

describe('delivery features in a cluster', () => {
  it('the configuration travels with the partition: after kill -9 of the owner the survivor shows it, filters, sends the headers and reports on the endpoint', async () => {
    let gone = false;
    const main = await startReceiver({ respond: () => ({ status: gone ? 410 : 204 }) });
    const ops = await startReceiver();
    const c = await startTestClusterForTest({ partitions: 4, leaseMs: 1_500, label: 'webhook-features' });
    const owners = await c.startSettled(['node-a', 'node-b']);
    const { projectId, apiKey } = await c.createProject(c.node('node-a'), 'features');
    const owner = c.node(owners.get(c.partitionOf(projectId))!);
    const survivor = c.live().find((node) => node !== owner)!;

    const config = {
      callbackUrl: main.url,
      status: 'active',
      eventTypes: ALL_TYPES,
      headers: { 'X-Tenant': 'acme' },
      filter: { 'data.amount': { $gte: 100 } },
      ordering: 'fifo',
      operationalUrl: ops.url,
      maxConcurrency: 3,
      rateLimitPerSecond: 40,
      retrySchedule: '0,1s,1m',
    };
    // Configured through the node that does not own the project: forwarded to the owner.
    const put = await c.apiSettled(survivor, 'PUT', '/v1/webhook', { key: apiKey, body: config });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const secrets = (await c.apiSettled(survivor, 'GET', '/v1/webhook/secret', { key: apiKey })).body;
    main.secret = secrets.secret;
    ops.secret = secrets.operationalSecret;
    expect(ops.secret).toMatch(/^whsec_/);

    const send = async (id: string, amount: number) => (await c.apiSettled(survivor, 'POST', '/v1/events', { key: apiKey, body: { id, type: 'service.trigger.event', data: { amount } } })).body;
    expect((await send('evt_small_1', 5)).deliveryId).toBeNull();
    expect((await send('evt_big_1', 500)).deliveryId).toMatch(/^dlv_/);
    await waitFor(() => main.received.length === 1, { timeoutMs: 10_000, message: 'the first delivery' });

    await owner.kill9();
    await c.waitForOwnership([survivor.nodeId], 15_000);
    const after = await c.apiSettled(survivor, 'GET', '/v1/webhook', { key: apiKey, timeoutMs: 15_000 });
    expect(after.body).toEqual(put.body);
    expect((await c.apiSettled(survivor, 'GET', '/v1/webhook/secret', { key: apiKey })).body).toEqual(secrets);

    expect((await send('evt_small_2', 5)).deliveryId).toBeNull();
    gone = true;
    const madeBySurvivor = (await send('evt_big_2', 500)).deliveryId;
    expect(madeBySurvivor).toMatch(/^dlv_/);
    await waitFor(() => ops.received.length === 1, { timeoutMs: 10_000, message: 'the disabled report from the new owner' });
    // Made by the new owner with the project's round of three (the nodes' is five); its 410 counts outside the round.
    const goneDelivery = await waitFor(async () => {
      const detail = (await c.apiSettled(survivor, 'GET', `/v1/logs/webhook-deliveries/${madeBySurvivor}`, { key: apiKey })).body;
      return detail.attempts === 1 ? detail : null;
    }, { timeoutMs: 10_000, message: 'the 410 attempt of the new owner\'s delivery' });
    expect(goneDelivery).toMatchObject({ status: 'pending', attempts: 1, maxAttempts: 4 });
    expect(ops.received[0]!.envelope).toMatchObject({ type: 'hookline.endpoint.disabled', data: { projectId, reason: 'the endpoint answered 410 Gone' } });
    expect(ops.received[0]!.verified).toBe(true);
    // At least once: the first may come again from the new owner when its outcome was not replicated before the kill.
    expect([...new Set(main.received.map((delivery) => delivery.envelope.id))]).toEqual(['evt_big_1', 'evt_big_2']);
    for (const delivery of main.received) expect([delivery.headers['x-tenant'], delivery.verified]).toEqual(['acme', true]);
    expect((await c.apiSettled(survivor, 'GET', '/v1/webhook', { key: apiKey })).body).toMatchObject({ status: 'disabled', ordering: 'fifo' });
  }, 90_000);
});
