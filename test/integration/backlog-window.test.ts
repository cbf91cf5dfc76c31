import { describe, expect, it, onTestFinished } from 'vitest';
import { ADMIN_KEY, ALL_TYPES, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import type { TestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Waiting deliveries on disk (delivery-window.ts): memory holds a window of each project's waiting
 * deliveries, what is due soon and what is in flight; the rest wait in LMDB and are read back in
 * turn. A backlog is bounded per project (HOOKLINE_MAX_WAITING_PER_PROJECT), so one project's dead
 * endpoint never refuses another project's events.
 */

async function gauges(hookline: TestHookline): Promise<{ live: number; waiting: number; scheduled: number }> {
  const text = await (await fetch(`${hookline.url}/metrics`)).text();
  const read = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)![1]);
  return { live: read('hookline_live_deliveries'), waiting: read('hookline_waiting_deliveries'), scheduled: read('hookline_scheduled_retries') };
}

function sharedDataDir(): string {
  const dir = makeTempDir();
  onTestFinished(() => dir.remove());
  return dir.path;
}

const event = (n: number) => ({ type: 'service.trigger.event' as const, data: { n } });

describe('waiting deliveries on disk', () => {
  it('holds at most the window of a paused endpoint\'s backlog in memory, and delivers all of it once active', async () => {
    const receiver = await startReceiver();
    const hookline = await startTestHookline({ deliveryWindow: 5 });
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'paused', eventTypes: ALL_TYPES });
    receiver.secret = (await hookline.client.getSecret()).secret;
    const sent: string[] = [];
    for (let n = 0; n < 40; n++) sent.push((await hookline.client.sendEvent(event(n))).deliveryId!);

    expect(await gauges(hookline)).toMatchObject({ live: 5, waiting: 40 });
    // A delivery on disk reads as any other.
    expect((await hookline.client.getDelivery(sent[39]!)).status).toBe('pending');

    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    await waitFor(() => receiver.received.length >= 40, { timeoutMs: 10_000, message: 'the whole backlog delivered' });
    await waitFor(async () => (await gauges(hookline)).waiting === 0, { message: 'nothing left waiting' });
    expect(new Set(receiver.received.map((delivery) => delivery.webhookId))).toEqual(new Set(sent));
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
    // Final ones leave memory once their last step is stored.
    await waitFor(async () => (await gauges(hookline)).live === 0, { message: 'nothing left in memory' });
  });

  it('keeps a retrying delivery due beyond the horizon on disk only, and reads it back when retried', async () => {
    let healthy = false;
    const receiver = await startReceiver({ respond: () => ({ status: healthy ? 204 : 500 }) });
    // The breaker off: ten failures in a row would open it, and the retry would then fail unsent.
    const hookline = await startTestHookline({ retrySchedule: [0, 10 * 60_000], circuitFailures: 0 });
    await configureReceiver(hookline, receiver);
    const sent = [];
    for (let n = 0; n < 10; n++) sent.push((await hookline.client.sendEvent(event(n))).deliveryId!);
    for (const id of sent) await waitForDeliveryStatus(hookline.client, id, 'retrying');
    // Nothing is due for ten minutes: neither in memory nor in the scheduler's heap.
    await waitFor(async () => (await gauges(hookline)).live === 0, { message: 'the retrying deliveries out of memory' });
    expect(await gauges(hookline)).toEqual({ live: 0, waiting: 10, scheduled: 0 });

    healthy = true;
    // Retrying, so made due now in the same round.
    const retried = await hookline.client.retryDelivery(sent[3]!);
    expect(retried.status).toBe('retrying');
    const detail = await waitForDeliveryStatus(hookline.client, sent[3]!, 'succeeded');
    expect(detail.attempts).toBe(2);
    expect(await gauges(hookline)).toMatchObject({ waiting: 9 });
  });

  it('restarts without reading the backlog into memory, and delivers it exactly once', async () => {
    const dataDir = sharedDataDir();
    const receiver = await startReceiver();
    const first = await startTestHookline({ dataDir, deliveryWindow: 4 });
    await first.client.configureWebhook({ callbackUrl: receiver.url, status: 'paused', eventTypes: ALL_TYPES });
    const sent = [];
    for (let n = 0; n < 30; n++) sent.push((await first.client.sendEvent(event(n))).deliveryId!);
    await first.close();

    const second = await startTestHookline({ dataDir, deliveryWindow: 4 });
    expect(await gauges(second)).toMatchObject({ live: 4, waiting: 30 });
    // New ids still sort after the stored ones: ordered delivery and the window rely on it.
    const later = (await second.client.sendEvent(event(30))).deliveryId!;
    expect(later > sent.at(-1)!).toBe(true);
    receiver.secret = (await second.client.getSecret()).secret;
    await second.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    await waitFor(() => receiver.received.length >= 31, { timeoutMs: 10_000, message: 'every delivery' });
    await waitFor(async () => (await gauges(second)).waiting === 0, { message: 'nothing left waiting' });
    expect(receiver.received.map((delivery) => delivery.webhookId).sort()).toEqual([...sent, later].sort());
  });

  it('attempts a new delivery whose first attempt is due beyond the horizon, and a retry due beyond it, when their time comes', async () => {
    const clock = new ManualClock(Date.now());
    let failures = 1;
    const receiver = await startReceiver({ respond: () => ({ status: failures-- > 0 ? 500 : 204 }) });
    const hookline = await startTestHookline({ retrySchedule: [5 * 60_000, 10 * 60_000], circuitFailures: 0 }, { clock });
    await configureReceiver(hookline, receiver);
    const sent = (await hookline.client.sendEvent(event(0))).deliveryId!;
    expect(receiver.received).toHaveLength(0);
    clock.advance(5 * 60_000);
    await waitForDeliveryStatus(hookline.client, sent, 'retrying');
    await waitFor(async () => (await gauges(hookline)).live === 0, { message: 'the retry on disk only' });
    clock.advance(10 * 60_000);
    await waitForDeliveryStatus(hookline.client, sent, 'succeeded');
    expect(receiver.received).toHaveLength(2);
  });

  it('keeps ordered (fifo) delivery in ingest order through a window smaller than the backlog', async () => {
    const receiver = await startReceiver();
    const hookline = await startTestHookline({ deliveryWindow: 3 });
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'paused', eventTypes: ALL_TYPES, ordering: 'fifo' });
    const sent = [];
    for (let n = 0; n < 20; n++) sent.push((await hookline.client.sendEvent(event(n))).deliveryId!);
    expect((await gauges(hookline)).live).toBe(3);
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES, ordering: 'fifo' });
    await waitFor(() => receiver.received.length >= 20, { timeoutMs: 10_000, message: 'the ordered backlog' });
    expect(receiver.received.map((delivery) => delivery.webhookId)).toEqual(sent);
  });

  it('refuses a project past HOOKLINE_MAX_WAITING_PER_PROJECT, naming it, while another project on the node is served', async () => {
    const receiver = await startReceiver();
    // A retry an hour away: A's deliveries stay waiting however long a busy machine takes over the test
    // (the helpers' 50 and 100 ms retries could dead-letter one between two requests).
    const hookline = await startTestHookline({ maxWaitingPerProject: 5, adminKey: ADMIN_KEY, retrySchedule: [0, 3_600_000] });
    // Project A (the test key's project): its endpoint is dead (nothing listens on port 9).
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/dead', status: 'active', eventTypes: ALL_TYPES });
    const created = await hookline.api('POST', '/admin/v1/projects', { body: { name: 'healthy' }, key: ADMIN_KEY });
    const other = hookline.clientFor(created.body.apiKey);
    await other.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });

    for (let n = 0; n < 5; n++) expect((await hookline.api('POST', '/v1/events', { body: event(n) })).status).toBe(202);
    const refused = await hookline.api('POST', '/v1/events', { body: event(5) });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('overloaded');
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.body.error.message).toMatch(/^project default has 5 deliveries waiting, its limit \(HOOKLINE_MAX_WAITING_PER_PROJECT\) is 5; nothing was stored/);
    expect(refused.body.error.details).toContainEqual(expect.objectContaining({ projectId: 'default', waiting: 5, limit: 5 }));
    // A batch of A's is refused whole; B's events are taken and delivered.
    expect((await hookline.api('POST', '/v1/events/batch', { body: { events: [event(6)] } })).status).toBe(503);
    for (let n = 0; n < 10; n++) expect((await other.sendEvent(event(n))).deliveryId).not.toBeNull();
    await waitFor(() => receiver.received.length >= 10, { message: "the other project's deliveries" });
  });
});
