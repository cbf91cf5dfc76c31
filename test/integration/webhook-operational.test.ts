import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { operationalEventSchema } from '../../src/actors/operational-events.js';
import { ALL_TYPES, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import type { TestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import { testDataDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/** Issue 15: operational webhooks, signed with their own secret, delivered and retried by the engine. */

async function configure(hookline: TestHookline, main: Receiver, ops: Receiver): Promise<void> {
  const config = await hookline.client.configureWebhook({ callbackUrl: main.url, status: 'active', eventTypes: ALL_TYPES, operationalUrl: ops.url });
  expect(config.operationalUrl).toBe(ops.url);
  const secrets = await hookline.client.getSecret();
  expect(secrets.operationalSecret).toMatch(/^whsec_/);
  expect(secrets.operationalSecret).not.toBe(secrets.secret);
  main.secret = secrets.secret;
  ops.secret = secrets.operationalSecret!;
}

/** The types received, each body checked against the schema the OpenAPI document's `webhooks` gives. */
const types = (receiver: Receiver) => receiver.received.map((delivery) => operationalEventSchema.parse(JSON.parse(delivery.body.toString())).type);

describe('operational webhooks', () => {
  it('reports a dead letter, signed with the operational secret, with the project and delivery concerned', async () => {
    const hookline = await startTestHookline({ retrySchedule: [0, 20] });
    const main = await startReceiver({ respond: () => ({ status: 500 }) });
    const ops = await startReceiver();
    await configure(hookline, main, ops);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered');
    await waitFor(() => ops.received.length === 1, { message: 'the operational event' });
    const [report] = ops.received;
    expect(report!.verified).toBe(true);
    expect(JSON.parse(report!.body.toString())).toEqual({
      version: 'v1',
      id: expect.stringMatching(/^evt_/),
      type: 'hookline.delivery.dead_lettered',
      data: { projectId: 'default', deliveryId: sent.deliveryId, eventId: sent.id, eventType: 'service.trigger.event', attempts: 2, deadLetteredAt: expect.any(String) },
      timestamp: expect.stringMatching(/\+00:00$/),
    });
    expect(report!.webhookId).toMatch(/^dlv_/);
    expect(types(ops)).toEqual(['hookline.delivery.dead_lettered']);
    // Not one of the project's deliveries: the log and the stats show only the event's own.
    expect((await hookline.client.listDeliveriesPage({})).data.map((delivery) => delivery.id)).toEqual([sent.deliveryId]);
  });

  it('reports the endpoint disabled (410) and recovered, while the endpoint itself holds its deliveries', async () => {
    const hookline = await startTestHookline();
    let gone = true;
    const main = await startReceiver({ respond: () => ({ status: gone ? 410 : 204 }) });
    const ops = await startReceiver();
    await configure(hookline, main, ops);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitFor(() => ops.received.length === 1, { message: 'the disabled report' });
    expect(ops.received[0]!.envelope).toMatchObject({ type: 'hookline.endpoint.disabled', data: { projectId: 'default', callbackUrl: main.url, reason: 'the endpoint answered 410 Gone' } });
    expect(ops.received[0]!.verified).toBe(true);

    gone = false;
    await hookline.client.configureWebhook({ callbackUrl: main.url, status: 'active', eventTypes: ALL_TYPES, operationalUrl: ops.url });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    await waitFor(() => ops.received.length === 2, { message: 'the recovered report' });
    expect(ops.received[1]!.envelope).toMatchObject({ type: 'hookline.endpoint.recovered', data: { projectId: 'default', callbackUrl: main.url } });
    // Recovered once: later successes report nothing.
    const again = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, again.deliveryId!, 'succeeded');
    expect(types(ops)).toEqual(['hookline.endpoint.disabled', 'hookline.endpoint.recovered']);
  });

  it('never reports on itself: a failing or gone operational URL is retried, dead-lettered quietly, and disables nothing', async () => {
    const hookline = await startTestHookline({ retrySchedule: [0, 20, 20] });
    const main = await startReceiver({ respond: () => ({ status: 500 }) });
    const ops = await startReceiver({ respond: (_delivery, index) => ({ status: index === 0 ? 410 : 500 }) });
    await configure(hookline, main, ops);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered');
    await waitFor(() => ops.received.length === 3, { message: 'three attempts of the one report' });
    // One delivery (one webhook-id), attempted as the schedule allows, and no report of its dead letter.
    expect(new Set(ops.received.map((delivery) => delivery.webhookId)).size).toBe(1);
    const second = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, second.deliveryId!, 'dead_lettered');
    await waitFor(() => ops.received.length === 6, { message: "the second report's three attempts" });
    expect(types(ops).every((type) => type === 'hookline.delivery.dead_lettered')).toBe(true);
    expect(new Set(ops.received.map((delivery) => delivery.webhookId)).size).toBe(2);
    expect((await hookline.client.getWebhook()).status).toBe('active');
  });

  it('counts its attempts and dead letters apart: the delivery metrics agree with the delivery log and the dead-letter gauge', async () => {
    const hookline = await startTestHookline({ retrySchedule: [0, 20] });
    const main = await startReceiver({ respond: () => ({ status: 500 }) });
    const ops = await startReceiver({ respond: () => ({ status: 500 }) });
    await configure(hookline, main, ops);
    const sent = await Promise.all([1, 2, 3].map((n) => hookline.client.sendEvent({ type: 'service.trigger.event', data: { n } })));
    for (const { deliveryId } of sent) await waitForDeliveryStatus(hookline.client, deliveryId!, 'dead_lettered');
    // Each dead letter's report is tried twice and dead-letters in turn; then nothing is live.
    await waitFor(() => ops.received.length === 6, { message: 'two attempts of each of the three reports' });
    const scrape = async () => {
      const text = String((await hookline.api('GET', '/metrics', { key: null })).body);
      return new Map(text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).map((line) => [line.slice(0, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1))]));
    };
    await waitFor(async () => (await scrape()).get('hookline_live_deliveries') === 0, { message: 'no delivery live' });
    const metrics = await scrape();

    const logged = (await hookline.client.listDeliveriesPage({})).data;
    expect(logged.map((delivery) => delivery.status)).toEqual(['dead_lettered', 'dead_lettered', 'dead_lettered']);
    const loggedAttempts = logged.reduce((sum, delivery) => sum + delivery.attempts, 0);
    expect(loggedAttempts).toBe(6);
    expect(metrics.get('hookline_delivery_attempts_total{outcome="http_status"}')).toBe(loggedAttempts);
    expect(metrics.get('hookline_delivery_attempt_duration_seconds_count')).toBe(loggedAttempts);
    expect(metrics.get('hookline_deliveries_total{status="dead_lettered"}')).toBe(3);
    expect(metrics.get('hookline_dead_lettered_deliveries')).toBe(3);
    expect(metrics.get('hookline_operational_delivery_attempts_total{outcome="http_status"}')).toBe(6);
    expect(metrics.get('hookline_operational_deliveries_total{status="dead_lettered"}')).toBe(3);
  });

  it("logs its own dead letter as operational, under the project's id, apart from the delivery's", async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const hookline = await startTestHookline({ retrySchedule: [0, 20] }, { logger });
    const main = await startReceiver({ respond: () => ({ status: 500 }) });
    const ops = await startReceiver({ respond: () => ({ status: 500 }) });
    await configure(hookline, main, ops);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const deadLetters = () => lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => String(entry.msg).includes('dead-lettered'));
    await waitFor(() => deadLetters().length === 2, { message: "the delivery's and the report's dead letters logged" });
    expect(deadLetters().map(({ projectId, deliveryId, msg }) => ({ projectId, deliveryId, msg }))).toEqual([
      { projectId: 'default', deliveryId: sent.deliveryId, msg: 'delivery dead-lettered' },
      { projectId: 'default', deliveryId: ops.received[0]!.webhookId, msg: 'operational delivery dead-lettered (to operationalUrl; not in the delivery log)' },
    ]);
    // The first is the one the API shows; the second is in no log an API key can read.
    expect((await hookline.client.getDelivery(sent.deliveryId!)).status).toBe('dead_lettered');
    expect((await hookline.api('GET', `/v1/logs/webhook-deliveries/${ops.received[0]!.webhookId}`)).status).toBe(404);
  });

  it('without an operationalUrl nothing is reported, and the operational secret is not shown', async () => {
    const hookline = await startTestHookline({ retrySchedule: [0] });
    const main = await startReceiver({ respond: () => ({ status: 500 }) });
    await hookline.client.configureWebhook({ callbackUrl: main.url, status: 'active', eventTypes: ALL_TYPES });
    expect(await hookline.client.getSecret()).toEqual({ secret: expect.stringMatching(/^whsec_/) });
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered');
    // The dead letter leaves memory once its step is written (GET shows it before); a report made
    // without an operational URL would be held in memory for good.
    await waitFor(() => hookline.node.engine.actorFor('default').liveCount === 0, { timeoutMs: 5_000, message: 'nothing left in memory after the dead letter' });
  });

  it('an operational delivery waiting for its retry is resumed after a restart, and the operational secret is kept', async () => {
    const dataDir = testDataDir();
    const main = await startReceiver({ respond: () => ({ status: 410 }) });
    const ops = await startReceiver({ respond: (_delivery, index) => ({ status: index === 0 ? 503 : 204 }) });
    const first = await startTestHookline({ dataDir, retrySchedule: [0, 6_000] });
    await configure(first, main, ops);
    const { operationalSecret } = await first.client.getSecret();
    await first.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitFor(() => ops.received.length === 1, { message: 'the first attempt of the disabled report' });
    await first.close();

    const restartedAt = Date.now();
    const second = await startTestHookline({ dataDir, retrySchedule: [0, 6_000] });
    expect((await second.client.getSecret()).operationalSecret).toBe(operationalSecret);
    await waitFor(() => ops.received.length === 2, { timeoutMs: 20_000, message: 'the resumed report' });
    expect(ops.received[1]!.receivedAt).toBeGreaterThanOrEqual(restartedAt);
    expect(ops.received[1]!.webhookId).toBe(ops.received[0]!.webhookId);
    expect(ops.received[1]!.verified).toBe(true);
  });
});
