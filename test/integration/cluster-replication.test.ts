import { describe, expect, it } from 'vitest';
import type { StoreReplicator } from '../../src/store/store.js';
import type { DeliveryRecord, EventRecord, WebhookRecord } from '../../src/store/records.js';
import { startReceiver } from '../helpers/receiver.js';
import { configureReceiver, startTestHookline } from '../helpers/hookline.js';
import { deliveryWithTransitions, openTempStore } from '../helpers/store-fixtures.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The store's side of cluster replication, in process: an ingest counts as accepted only once its
 * changelog append succeeded, and a takeover's restore never moves a record back in time.
 */

/**
 * A replicator that records what it is given (an event as `eventId/deliveryId`: the delivery made
 * with it comes in the same call) and fails the next `failures` event appends.
 */
function recordingReplicator(failures: number): StoreReplicator & { events: string[] } {
  const events: string[] = [];
  return {
    events,
    async project() {},
    async delivery() {},
    async deliverySteps() {},
    async webhook() {},
    async event(_projectId: string, record: EventRecord, delivery: DeliveryRecord | null) {
      if (failures > 0) {
        failures--;
        throw new Error('changelog append timed out');
      }
      events.push(`${record.id}/${delivery?.id}`);
    },
  };
}

describe('replication of an ingest', () => {
  it('an event whose changelog append fails is not kept: the sender\'s retry is accepted anew and replicated, not answered as a repeat', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const replicator = recordingReplicator(1);
    hookline.node.engine.store.replicator = replicator;

    const event = { id: 'evt_unreplicated', type: 'service.trigger.event', data: { n: 1 } };
    const first = await hookline.api('POST', '/v1/events', { body: event });
    expect(first.status).toBe(503);
    expect(hookline.node.engine.store.getEvent('default', 'evt_unreplicated')).toBeUndefined();

    const retry = await hookline.api('POST', '/v1/events', { body: event });
    expect(retry.status).toBe(202);
    expect(retry.body.deliveryId).toMatch(/^dlv_/);
    // The event and its delivery in one append: apart, the event alone could reach the changelog.
    expect(replicator.events).toEqual([`evt_unreplicated/${retry.body.deliveryId}`]);
    const deliveries = (await hookline.api('GET', '/v1/logs/webhook-deliveries')).body.data as Array<{ id: string }>;
    expect(deliveries.map((delivery) => delivery.id)).toEqual([retry.body.deliveryId]);
  });
});

describe('a copy of an event whose replication is still running', () => {
  it('is not answered as a repeat by an actor that never saw the first ingest: when the append fails, it is refused as the first was and the event is not kept', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    // The first event append waits until the test fails it; later ones are stored.
    let failFirst!: (error: Error) => void;
    const firstAppend = new Promise<void>((_, reject) => (failFirst = reject));
    const replicated: string[] = [];
    let appends = 0;
    hookline.node.engine.store.replicator = {
      async project() {},
      async delivery() {},
      async deliverySteps() {},
      async webhook() {},
      async event(_projectId: string, record: EventRecord) {
        if (appends++ === 0) await firstAppend;
        replicated.push(record.id);
      },
    };
    const event = { id: 'evt_replicating', type: 'service.trigger.event', data: { n: 1 } };
    const first = hookline.api('POST', '/v1/events', { body: event });
    await waitFor(() => hookline.node.engine.store.getEvent('default', event.id) !== undefined, { message: 'the first copy committed here' });

    // The project's actor is dropped while that ingest still waits (a partition handed back whose
    // drain ran out of time), so the next copy meets a new actor and the event already in LMDB.
    await hookline.node.engine.releaseProjects(() => true);
    const second = hookline.api('POST', '/v1/events', { body: event });
    const early = await Promise.race([second.then(() => 'answered'), new Promise((resolve) => setTimeout(resolve, 300, 'waiting'))]);
    expect(early).toBe('waiting');

    failFirst(new Error('changelog append timed out'));
    expect((await first).status).toBe(503);
    const refused = await second;
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('storage_unavailable');
    expect(hookline.node.engine.store.getEvent('default', event.id)).toBeUndefined();

    const again = await hookline.api('POST', '/v1/events', { body: event });
    expect(again.status).toBe(202);
    expect(replicated).toEqual([event.id]);
  });
});

describe('restore from the changelog', () => {
  const delivery = (transitions: number, status: DeliveryRecord['status']) => deliveryWithTransitions('dlv_01M80000000000000000000000', transitions, status);
  const webhook = (updatedAt: number): WebhookRecord => ({ callbackUrl: `https://example.com/${updatedAt}`, state: 'active', eventTypes: ['service.trigger.event'], createdAt: 1, updatedAt, secrets: [], failingSince: null, disabledAt: null, disabledReason: null });

  it('keeps this node\'s copy when it is newer than the changelog\'s, and takes the changelog\'s otherwise', async () => {
    const store = openTempStore();
    await store.restoreRecord('p', { kind: 'delivery', record: delivery(4, 'retrying') });
    await store.restoreRecord('p', { kind: 'delivery', record: delivery(3, 'delivering') });
    expect(store.getDelivery('p', 'dlv_01M80000000000000000000000')!.transitions).toHaveLength(4);
    await store.restoreRecord('p', { kind: 'delivery', record: delivery(6, 'succeeded') });
    expect(store.getDelivery('p', 'dlv_01M80000000000000000000000')!.status).toBe('succeeded');
    // The status index follows the record kept.
    expect([...store.deliveryIdsByStatus('p', 'retrying')]).toEqual([]);
    expect([...store.deliveryIdsByStatus('p', 'succeeded')]).toEqual(['dlv_01M80000000000000000000000']);

    await store.restoreRecord('p', { kind: 'webhook', record: webhook(20) });
    await store.restoreRecord('p', { kind: 'webhook', record: webhook(10) });
    expect(store.getWebhook('p')!.updatedAt).toBe(20);
  });
});
