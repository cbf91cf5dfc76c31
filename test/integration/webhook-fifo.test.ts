import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALL_TYPES, allDeliveries, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import type { TestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import { testDataDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/** Issue 15: ordered delivery (`ordering: "fifo"`). */

const ATTEMPTS = 3;
const SEED = 1525;

/** A receiver that fails the first `failures(webhookId)` requests of each delivery and notes requests that overlap. */
async function orderedReceiver(failures: (webhookId: string) => number) {
  const seen = new Map<string, number>();
  const overlaps: string[] = [];
  let active = 0;
  const receiver = await startReceiver({
    respond: async (delivery) => {
      active++;
      if (active > 1) overlaps.push(delivery.webhookId);
      // Holds the answer a moment, so that a request sent meanwhile would overlap.
      await new Promise((resolve) => setImmediate(resolve));
      active--;
      const count = seen.get(delivery.webhookId) ?? 0;
      seen.set(delivery.webhookId, count + 1);
      return { status: count < failures(delivery.webhookId) ? 500 : 204 };
    },
  });
  return { receiver, overlaps };
}

/** The webhook-ids in arrival order, each run of repeats as one entry with its length. */
function runs(receiver: Receiver): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (const { webhookId } of receiver.received) {
    const last = out.at(-1);
    if (last?.[0] === webhookId) last[1]++;
    else out.push([webhookId, 1]);
  }
  return out;
}

async function configureFifo(hookline: TestHookline, receiver: Receiver): Promise<void> {
  const config = await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES, ordering: 'fifo' });
  expect(config.ordering).toBe('fifo');
  receiver.secret = (await hookline.client.getSecret()).secret;
}

describe('ordered delivery', () => {
  it('receives deliveries in ingest order, one at a time, each through its retries or dead letter before the next (random failure patterns)', async () => {
    const patterns = fc.sample(fc.array(fc.integer({ min: 0, max: ATTEMPTS }), { minLength: 4, maxLength: 12 }), { seed: SEED, numRuns: 6 });
    for (const pattern of patterns) {
      const hookline = await startTestHookline({ retrySchedule: [0, 5, 5] });
      const failuresById = new Map<string, number>();
      const { receiver, overlaps } = await orderedReceiver((id) => failuresById.get(id) ?? 0);
      // Paused while the events go in, so that the pattern is known before the first attempt.
      await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'paused', eventTypes: ALL_TYPES, ordering: 'fifo' });
      const answers = await hookline.client.sendEvents(pattern.map((n) => ({ type: 'service.trigger.event' as const, data: { n } })));
      const ids = answers.map((answer) => (answer.ok ? answer.deliveryId! : ''));
      ids.forEach((id, index) => failuresById.set(id, pattern[index]!));
      await configureFifo(hookline, receiver);
      await waitFor(async () => (await allDeliveries(hookline.client)).every((delivery) => delivery.status === 'succeeded' || delivery.status === 'dead_lettered'), { timeoutMs: 20_000, message: 'every delivery resolved' });
      // Exactly: each delivery's attempts together, in ingest order; a dead letter lets the next go.
      expect(runs(receiver), JSON.stringify(pattern)).toEqual(ids.map((id, index) => [id, Math.min(pattern[index]! + 1, ATTEMPTS)]));
      expect(overlaps).toEqual([]);
      await hookline.close();
    }
  });

  it('a failing head keeps its place across a restart; unordered, the same events overtake it', async () => {
    const dataDir = testDataDir();
    let headFails = true;
    const receiver = await startReceiver({ respond: (delivery) => ({ status: headFails && delivery.envelope.data.n === 1 ? 500 : 204 }) });
    // The head's retry is a minute away: it is still waiting when the node stops, and after the restart.
    const first = await startTestHookline({ dataDir, retrySchedule: [0, 60_000, 60_000] });
    await configureFifo(first, receiver);
    const sent = [];
    for (let n = 1; n <= 3; n++) sent.push(await first.client.sendEvent({ type: 'service.trigger.event', data: { n } }));
    await waitForDeliveryStatus(first.client, sent[0]!.deliveryId!, 'retrying');
    expect(receiver.received.map((delivery) => delivery.envelope.data.n)).toEqual([1]);
    expect((await first.client.getDelivery(sent[2]!.deliveryId!)).status).toBe('pending');
    await first.close();

    headFails = false;
    const second = await startTestHookline({ dataDir, retrySchedule: [0, 60_000, 60_000] });
    expect((await second.client.getWebhook()).ordering).toBe('fifo');
    await second.client.retryDelivery(sent[0]!.deliveryId!);
    await waitForDeliveryStatus(second.client, sent[2]!.deliveryId!, 'succeeded', 10_000);
    expect(receiver.received.map((delivery) => delivery.envelope.data.n)).toEqual([1, 1, 2, 3]);

    // The control: unordered, later events do not wait for a failing one.
    headFails = true;
    await second.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    const head = await second.client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
    const behind = await second.client.sendEvent({ type: 'service.trigger.event', data: { n: 2 } });
    await waitForDeliveryStatus(second.client, behind.deliveryId!, 'succeeded');
    expect((await second.client.getDelivery(head.deliveryId!)).status).toBe('retrying');
  });

  it('switching ordering applies at once to the deliveries already waiting, both ways', async () => {
    const hookline = await startTestHookline({ retrySchedule: [0, 5, 60_000] });
    let blockHead = false;
    const failuresById = new Map<string, number>();
    const { receiver, overlaps } = await orderedReceiver((id) => (blockHead && id === ids[0] ? Infinity : (failuresById.get(id) ?? 0)));
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'paused', eventTypes: ALL_TYPES });
    const answers = await hookline.client.sendEvents([1, 2, 3, 4].map((n) => ({ type: 'service.trigger.event' as const, data: { n } })));
    const ids = answers.map((answer) => (answer.ok ? answer.deliveryId! : ''));
    failuresById.set(ids[0]!, 1);
    // Waiting since before the switch: they go out in ingest order, one at a time.
    await configureFifo(hookline, receiver);
    await waitForDeliveryStatus(hookline.client, ids[3]!, 'succeeded');
    expect(runs(receiver)).toEqual([[ids[0], 2], [ids[1], 1], [ids[2], 1], [ids[3], 1]]);
    expect(overlaps).toEqual([]);

    // A head that keeps failing blocks the line (its third attempt is a minute away) until the switch back.
    blockHead = true;
    const more = await hookline.client.sendEvents([5, 6, 7].map((n) => ({ type: 'service.trigger.event' as const, data: { n } })));
    ids.splice(0, ids.length, ...more.map((answer) => (answer.ok ? answer.deliveryId! : '')));
    await waitFor(() => receiver.byWebhookId(ids[0]!).length === 2, { message: 'two failed attempts of the head' });
    expect((await hookline.client.getDelivery(ids[0]!)).status).toBe('retrying');
    expect(receiver.byWebhookId(ids[1]!)).toHaveLength(0);
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES, ordering: 'unordered' });
    await waitForDeliveryStatus(hookline.client, ids[2]!, 'succeeded');
    await waitForDeliveryStatus(hookline.client, ids[1]!, 'succeeded');
    expect((await hookline.client.getDelivery(ids[0]!)).status).toBe('retrying');
  });

  it('a redrive of several dead letters sends them in ingest order (they went out newest first)', async () => {
    const hookline = await startTestHookline({ retrySchedule: [0] });
    let failing = true;
    const receiver = await startReceiver({ respond: () => ({ status: failing ? 500 : 204 }) });
    await configureFifo(hookline, receiver);
    const answers = await hookline.client.sendEvents([1, 2, 3, 4, 5].map((n) => ({ type: 'service.trigger.event' as const, data: { n } })));
    const ids = answers.map((answer) => (answer.ok ? answer.deliveryId! : ''));
    await waitForDeliveryStatus(hookline.client, ids[4]!, 'dead_lettered');
    failing = false;
    expect((await hookline.client.redriveDeadLetters()).redriven).toBe(5);
    await waitFor(() => receiver.received.length === 10, { message: 'the five redriven deliveries' });
    expect(receiver.received.slice(5).map((delivery) => delivery.webhookId)).toEqual(ids);
  });

  it('redrive and replay join the line at its tail', async () => {
    const hookline = await startTestHookline({ retrySchedule: [0] });
    let failA = true;
    const receiver = await startReceiver({ respond: (delivery) => ({ status: failA && delivery.envelope.data.name === 'A' ? 500 : 204 }) });
    await configureFifo(hookline, receiver);
    const a = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { name: 'A' } });
    await waitForDeliveryStatus(hookline.client, a.deliveryId!, 'dead_lettered');
    failA = false;
    // Held while paused: B is in the line before A is redriven and A's event is replayed.
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'paused', eventTypes: ALL_TYPES, ordering: 'fifo' });
    await hookline.client.sendEvent({ type: 'service.trigger.event', data: { name: 'B' } });
    expect((await hookline.client.redriveDeadLetters()).redriven).toBe(1);
    await hookline.client.replayEvent(a.id);
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES, ordering: 'fifo' });
    await waitFor(() => receiver.received.length === 4, { message: 'B, A redriven and A replayed' });
    expect(receiver.received.map((delivery) => delivery.envelope.data.name)).toEqual(['A', 'B', 'A', 'A']);
    expect(receiver.received[2]!.webhookId).toBe(a.deliveryId);
  });
});
