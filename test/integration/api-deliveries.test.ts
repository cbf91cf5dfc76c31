import { describe, expect, it } from 'vitest';
import { ALL_TYPES, ISO_WITH_OFFSET, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver, type Reply } from '../helpers/receiver.js';

/** The delivery log routes: list, detail, retry and redrive, with their validation and conflicts. */

function expectError(answer: { status: number; body: any }, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.body).toEqual({ error: { code, message: expect.any(String), details: expect.any(Array) } });
}

const DELIVERY_KEYS = ['attempts', 'createdAt', 'eventId', 'eventType', 'id', 'lastAttempt', 'maxAttempts', 'nextAttemptAt', 'status', 'updatedAt'];

describe('GET /v1/logs/webhook-deliveries', () => {
  it('answers {data, nextCursor} with every field of a delivery, absent values null', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
    const empty = await hookline.api('GET', '/v1/logs/webhook-deliveries');
    expect(empty).toMatchObject({ status: 200, body: { data: [], nextCursor: null } });

    const sent = await hookline.client.sendEvent({ id: 'evt_list', type: 'service.connected_account.expired', data: {} });
    const answer = await hookline.api('GET', '/v1/logs/webhook-deliveries');
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body).sort()).toEqual(['data', 'nextCursor']);
    expect(answer.body.nextCursor).toBeNull();
    const [delivery] = answer.body.data;
    expect(Object.keys(delivery).sort()).toEqual(DELIVERY_KEYS);
    expect(delivery).toEqual({
      id: sent.deliveryId,
      eventId: 'evt_list',
      eventType: 'service.connected_account.expired',
      status: 'pending',
      attempts: 0,
      maxAttempts: 3,
      nextAttemptAt: expect.stringMatching(ISO_WITH_OFFSET),
      createdAt: expect.stringMatching(ISO_WITH_OFFSET),
      updatedAt: expect.stringMatching(ISO_WITH_OFFSET),
      lastAttempt: null,
    });
  });

  it('filters by status, eventType and eventId', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: (delivery) => ({ status: delivery.envelope.type === 'service.trigger.event' ? 204 : 500 }) });
    await configureReceiver(hookline, receiver);
    const ok = await hookline.client.sendEvent({ id: 'evt_ok', type: 'service.trigger.event', data: {} });
    const bad = await hookline.client.sendEvent({ id: 'evt_bad', type: 'service.trigger.disabled', data: {} });
    await waitForDeliveryStatus(hookline.client, ok.deliveryId!, 'succeeded');
    await waitForDeliveryStatus(hookline.client, bad.deliveryId!, 'dead_lettered');

    const ids = async (query: Record<string, string>) => (await hookline.client.listDeliveriesPage(query)).data.map((delivery) => delivery.id);
    expect(await ids({ status: 'succeeded' })).toEqual([ok.deliveryId]);
    expect(await ids({ status: 'dead_lettered' })).toEqual([bad.deliveryId]);
    expect(await ids({ status: 'pending' })).toEqual([]);
    expect(await ids({ eventType: 'service.trigger.disabled' })).toEqual([bad.deliveryId]);
    expect(await ids({ eventId: 'evt_ok' })).toEqual([ok.deliveryId]);
    expect(await ids({ eventId: 'evt_unknown' })).toEqual([]);
    expect(await ids({ eventId: 'evt_ok', status: 'dead_lettered' })).toEqual([]);
  });

  it.each([
    ['limit=0', 'limit=0'],
    ['limit=251', 'limit=251'],
    ['limit=-1', 'limit=-1'],
    ['limit=1.5', 'limit=1.5'],
    ['limit=abc', 'limit=abc'],
    ['limit in hexadecimal', 'limit=0x10'],
    ['limit in exponent form', 'limit=1e2'],
    ['limit with spaces', 'limit=%2010'],
    ['limit given twice', 'limit=10&limit=20'],
    ['an unknown status', 'status=failed'],
    ['an unknown eventType', 'eventType=user.created'],
    ['since that is not ISO 8601', 'since=yesterday'],
    ['until without an offset', 'until=2026-01-01T00:00:00'],
    ['a cursor that is not a delivery id', 'cursor=abc'],
    ['an unknown parameter', 'sort=asc'],
  ])('%s: 400 validation_failed', async (_name, query) => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('GET', `/v1/logs/webhook-deliveries?${query}`);
    expectError(answer, 400, 'validation_failed');
    expect(answer.body.error.details[0]).toMatchObject({ path: expect.stringMatching(/^query/) });
  });

  it('accepts limit 1 and 250 (and leading zeros), in decimal digits', async () => {
    const hookline = await startTestHookline();
    expect((await hookline.api('GET', '/v1/logs/webhook-deliveries?limit=1')).status).toBe(200);
    expect((await hookline.api('GET', '/v1/logs/webhook-deliveries?limit=250')).status).toBe(200);
    expect((await hookline.api('GET', '/v1/logs/webhook-deliveries?limit=007')).status).toBe(200);
  });

  it.each(['/v1/events', '/v1/logs/rejected-events'])('%s refuses a limit that is not decimal digits too', async (path) => {
    const hookline = await startTestHookline();
    expectError(await hookline.api('GET', `${path}?limit=0x10`), 400, 'validation_failed');
  });
});

describe('GET /v1/logs/webhook-deliveries/:id', () => {
  it('answers the delivery with attemptLog and transitions; 404 delivery_not_found for an unknown id', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: () => ({ status: 200, body: 'thanks' }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');

    const answer = await hookline.api('GET', `/v1/logs/webhook-deliveries/${sent.deliveryId}`);
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body).sort()).toEqual([...DELIVERY_KEYS, 'attemptLog', 'transitions'].sort());
    expect(answer.body).toMatchObject({ status: 'succeeded', attempts: 1, nextAttemptAt: null });
    expect(answer.body.lastAttempt).toEqual({ at: expect.stringMatching(ISO_WITH_OFFSET), statusCode: 200, durationMs: expect.any(Number), error: null });
    expect(answer.body.attemptLog).toEqual([{ attempt: 1, at: answer.body.lastAttempt.at, statusCode: 200, durationMs: expect.any(Number), error: null, errorCode: null, responseBody: 'thanks' }]);
    for (const transition of answer.body.transitions) {
      expect(Object.keys(transition).sort()).toEqual(['at', 'event', 'from', 'to']);
      expect(transition.at).toMatch(ISO_WITH_OFFSET);
    }

    expectError(await hookline.api('GET', '/v1/logs/webhook-deliveries/dlv_00000000000000000000000000'), 404, 'delivery_not_found');
  });
});

describe('POST /v1/logs/webhook-deliveries/:id/retry and /redrive', () => {
  it('retry of a succeeded delivery: 409 delivery_succeeded; of an unknown one: 404', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    expectError(await hookline.api('POST', `/v1/logs/webhook-deliveries/${sent.deliveryId}/retry`), 409, 'delivery_succeeded');
    expectError(await hookline.api('POST', '/v1/logs/webhook-deliveries/dlv_00000000000000000000000000/retry'), 404, 'delivery_not_found');
    expect(receiver.received).toHaveLength(1);
  });

  it('retry of a pending delivery (held by a paused webhook): 409 delivery_in_progress', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const answer = await hookline.api('POST', `/v1/logs/webhook-deliveries/${sent.deliveryId}/retry`);
    expectError(answer, 409, 'delivery_in_progress');
    // Not "it will be attempted" as such: it waits for the endpoint.
    expect(answer.body.error.message).toBe(`delivery ${sent.deliveryId} is pending, held while the endpoint is paused; it will be attempted once the endpoint is active again (PUT /v1/webhook with "status": "active")`);
    expect((await hookline.client.getDelivery(sent.deliveryId!)).status).toBe('pending');
  });

  it('retry of a delivering delivery (receiver still answering): 409 delivery_in_progress', async () => {
    const hookline = await startTestHookline({ deliveryTimeoutMs: 5_000 });
    let release: (reply: Reply) => void = () => {};
    const held = new Promise<Reply>((resolve) => (release = resolve));
    const receiver = await startReceiver({ respond: () => held });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'delivering');
    expectError(await hookline.api('POST', `/v1/logs/webhook-deliveries/${sent.deliveryId}/retry`), 409, 'delivery_in_progress');
    release({ status: 204 });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    expect(receiver.received).toHaveLength(1);
  });

  it('redrive answers 202 {redriven: n}; validates its body', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered');
    receiver.respond = () => ({ status: 204 });

    expect(await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { eventType: 'service.trigger.disabled' } })).toMatchObject({ status: 202, body: { redriven: 0 } });
    const future = new Date(Date.now() + 60_000).toISOString();
    expect(await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { since: future } })).toMatchObject({ status: 202, body: { redriven: 0 } });
    expectError(await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { since: 'yesterday' } }), 400, 'validation_failed');
    expectError(await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { eventType: 'x' } }), 400, 'validation_failed');
    expectError(await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { all: true } }), 400, 'validation_failed');

    const redrive = await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { until: future, eventType: 'service.trigger.event' } });
    expect(redrive).toMatchObject({ status: 202, body: { redriven: 1 } });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    expect(await hookline.client.redriveDeadLetters()).toEqual({ redriven: 0, wouldRedrive: null });
  });
});
