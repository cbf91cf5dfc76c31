import { describe, expect, it } from 'vitest';
import { HooklineApiError } from '../../src/sdk/index.js';
import { ALL_TYPES, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';

/** POST /v1/events and POST /v1/events/:eventId/replay at the edges of the contract. */

function expectError(answer: { status: number; body: any }, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.body).toEqual({ error: { code, message: expect.any(String), details: expect.any(Array) } });
}

const event = { type: 'service.trigger.event', data: { hello: 'world' } };

describe('POST /v1/events', () => {
  it('answers 202 {id, deliveryId} with a generated evt_ id when the event matches', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
    const answer = await hookline.api('POST', '/v1/events', { body: event });
    expect(answer.status).toBe(202);
    expect(answer.body).toEqual({ id: expect.stringMatching(/^evt_[A-Za-z0-9_-]+$/), deliveryId: expect.stringMatching(/^dlv_/) });
    expect(Object.keys(answer.body).sort()).toEqual(['deliveryId', 'id']);
  });

  it('answers 202 with deliveryId null without a webhook and for a type outside eventTypes; the event is stored, never delivered', async () => {
    const hookline = await startTestHookline();
    const unconfigured = await hookline.api('POST', '/v1/events', { body: { ...event, id: 'evt_before_config' } });
    expect(unconfigured).toMatchObject({ status: 202, body: { id: 'evt_before_config', deliveryId: null } });

    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver, { eventTypes: ['service.trigger.disabled'] });
    const unmatched = await hookline.client.sendEvent({ id: 'evt_unmatched', type: 'service.trigger.event', data: {} });
    expect(unmatched).toEqual({ id: 'evt_unmatched', deliveryId: null, duplicate: false });
    const matched = await hookline.client.sendEvent({ type: 'service.trigger.disabled', data: {} });
    await waitForDeliveryStatus(hookline.client, matched.deliveryId!, 'succeeded');

    expect(receiver.received.map((delivery) => delivery.envelope.id)).toEqual([matched.id]);
    expect((await hookline.client.listDeliveriesPage({ eventId: 'evt_unmatched' })).data).toEqual([]);
    // Stored: it can be replayed, whatever eventTypes says.
    const replay = await hookline.client.replayEvent('evt_unmatched');
    await waitForDeliveryStatus(hookline.client, replay.deliveryId, 'succeeded');
    expect(receiver.received.map((delivery) => delivery.envelope.id)).toEqual([matched.id, 'evt_unmatched']);
  });

  it('the same id with the same body answers 200 with the first answer and makes no second delivery', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const body = { id: 'evt_idem-1', type: 'service.trigger.event', data: { a: 1, b: [1, 2] }, metadata: { tenant_id: 't1' } };
    const first = await hookline.api('POST', '/v1/events', { body });
    expect(first.status).toBe(202);
    await waitForDeliveryStatus(hookline.client, first.body.deliveryId, 'succeeded');

    const again = await hookline.api('POST', '/v1/events', { body });
    expect(again).toMatchObject({ status: 200, body: first.body });
    // Keys in another order are the same body.
    const reordered = await hookline.api('POST', '/v1/events', { body: { metadata: { tenant_id: 't1' }, data: { b: [1, 2], a: 1 }, type: body.type, id: body.id } });
    expect(reordered).toMatchObject({ status: 200, body: first.body });
    expect(await hookline.client.sendEvent(body as never)).toEqual({ ...first.body, duplicate: true });

    expect((await hookline.client.listDeliveriesPage({ eventId: body.id })).data).toHaveLength(1);
    expect(receiver.received).toHaveLength(1);
  });

  it('concurrent repeats of one id share one answer and one delivery', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
    const body = { id: 'evt_concurrent', ...event };
    const answers = await Promise.all(Array.from({ length: 8 }, () => hookline.api('POST', '/v1/events', { body })));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 202]);
    expect(new Set(answers.map((answer) => answer.body.deliveryId)).size).toBe(1);
    expect((await hookline.client.listDeliveriesPage({ eventId: body.id })).data).toHaveLength(1);
  });

  it('the same id with a different body answers 409 event_id_conflict', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
    expect((await hookline.api('POST', '/v1/events', { body: { id: 'evt_c', ...event } })).status).toBe(202);
    expectError(await hookline.api('POST', '/v1/events', { body: { id: 'evt_c', ...event, data: { hello: 'there' } } }), 409, 'event_id_conflict');
    expectError(await hookline.api('POST', '/v1/events', { body: { id: 'evt_c', ...event, type: 'service.trigger.disabled' } }), 409, 'event_id_conflict');
    const error = await hookline.client.sendEvent({ id: 'evt_c', type: 'service.trigger.event', data: {}, metadata: { tenant_id: 'x' } }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(HooklineApiError);
    expect(error).toMatchObject({ status: 409, code: 'event_id_conflict' });
  });

  it.each([
    ['no type', { data: {} }],
    ['an unknown type', { type: 'user.created', data: {} }],
    ['no data', { type: 'service.trigger.event' }],
    ['data that is not an object', { type: 'service.trigger.event', data: [1, 2] }],
    ['an id without the evt_ prefix', { id: 'abc', type: 'service.trigger.event', data: {} }],
    ['an id with a forbidden character', { id: 'evt_a.b', type: 'service.trigger.event', data: {} }],
    ['an id over 100 characters after evt_', { id: `evt_${'a'.repeat(101)}`, type: 'service.trigger.event', data: {} }],
    ['an unknown metadata key', { type: 'service.trigger.event', data: {}, metadata: { user: 'x' } }],
    ['a non-string metadata value', { type: 'service.trigger.event', data: {}, metadata: { tenant_id: 1 } }],
    ['a timestamp that is not ISO 8601', { type: 'service.trigger.event', data: {}, timestamp: 'yesterday' }],
    ['a timestamp without an offset', { type: 'service.trigger.event', data: {}, timestamp: '2026-11-21T23:03:49' }],
    ['an unknown field', { type: 'service.trigger.event', data: {}, extra: true }],
  ])('%s: 400 validation_failed with details', async (_name, body) => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('POST', '/v1/events', { body });
    expectError(answer, 400, 'validation_failed');
    expect(answer.body.error.details.length).toBeGreaterThan(0);
    expect(answer.body.error.details[0]).toMatchObject({ path: expect.stringMatching(/^body/), message: expect.any(String) });
  });

  it('invalid JSON: 400 invalid_json; an empty JSON body: 400', async () => {
    const hookline = await startTestHookline();
    expectError(await hookline.api('POST', '/v1/events', { body: '{"type":' }), 400, 'invalid_json');
    const empty = await hookline.api('POST', '/v1/events', { headers: { 'content-type': 'application/json' } });
    expect(empty.status).toBe(400);
    expect(empty.body.error.code).toEqual(expect.any(String));
  });

  it('a body over maxBodyBytes: 413 payload_too_large; text/plain: 415 unsupported_media_type', async () => {
    const hookline = await startTestHookline({ maxBodyBytes: 1_024 });
    const small = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: { pad: 'x'.repeat(900) } } });
    expect(small.status).toBe(202);
    const big = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: { pad: 'x'.repeat(1_100) } } });
    expectError(big, 413, 'payload_too_large');
    const text = await hookline.api('POST', '/v1/events', { body: JSON.stringify(event), headers: { 'content-type': 'text/plain' } });
    expectError(text, 415, 'unsupported_media_type');
    const form = await hookline.api('POST', '/v1/events', { body: 'type=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectError(form, 415, 'unsupported_media_type');
  });

  it('415 names what to send: content-type: application/json, and what came instead', async () => {
    const hookline = await startTestHookline();
    // A byte body: fetch then sends no content-type at all, as a hand-rolled client might.
    const bare = await fetch(`${hookline.url}/v1/events`, { method: 'POST', headers: { authorization: 'Bearer test-key' }, body: new TextEncoder().encode(JSON.stringify(event)) });
    const bareBody = await bare.json();
    expect(bare.status).toBe(415);
    expect(bareBody.error).toMatchObject({ code: 'unsupported_media_type', message: 'send the body as JSON with content-type: application/json (the request had no content-type)' });
    const text = await hookline.api('POST', '/v1/events', { body: JSON.stringify(event), headers: { 'content-type': 'text/plain' } });
    expectError(text, 415, 'unsupported_media_type');
    expect(text.body.error.message).toBe('send the body as JSON with content-type: application/json (got content-type: text/plain)');
  });

  it('the default body limit is 262,144 bytes', async () => {
    const hookline = await startTestHookline();
    const envelopeOverhead = JSON.stringify({ type: 'service.trigger.event', data: { pad: '' } }).length;
    const exact = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: { pad: 'x'.repeat(262_144 - envelopeOverhead) } } });
    expect(exact.status).toBe(202);
    const over = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: { pad: 'x'.repeat(262_145 - envelopeOverhead) } } });
    expectError(over, 413, 'payload_too_large');
  });
});

describe('POST /v1/events/:eventId/replay', () => {
  it('answers 404 event_not_found for an unknown event', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
    expectError(await hookline.api('POST', '/v1/events/evt_nope/replay'), 404, 'event_not_found');
  });

  it('answers 202 {deliveryId} with a new delivery of a stored event', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
    const sent = await hookline.client.sendEvent({ id: 'evt_r', type: 'service.trigger.event', data: {} });
    const replay = await hookline.api('POST', '/v1/events/evt_r/replay');
    expect(replay.status).toBe(202);
    expect(replay.body).toEqual({ deliveryId: expect.stringMatching(/^dlv_/) });
    expect(replay.body.deliveryId).not.toBe(sent.deliveryId);
    const ids = (await hookline.client.listDeliveriesPage({ eventId: 'evt_r' })).data.map((delivery) => delivery.id);
    expect(ids.sort()).toEqual([sent.deliveryId, replay.body.deliveryId].sort());
  });
});
