import { describe, expect, it } from 'vitest';
import { ADMIN_KEY, ALL_TYPES, API_KEY, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';

/** Admin routes, project isolation, and the unauthenticated ops routes. */

function expectError(answer: { status: number; body: any }, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.body).toEqual({ error: { code, message: expect.any(String), details: expect.any(Array) } });
}

describe('POST /admin/v1/projects', () => {
  it('answers 404 when no admin key is configured, whatever the key', async () => {
    const hookline = await startTestHookline();
    expectError(await hookline.api('POST', '/admin/v1/projects', { body: { name: 'p' }, key: null }), 404, 'not_found');
    expectError(await hookline.api('POST', '/admin/v1/projects', { body: { name: 'p' }, key: ADMIN_KEY }), 404, 'not_found');
    expectError(await hookline.api('POST', '/admin/v1/projects', { body: { name: 'p' } }), 404, 'not_found');
  });

  it('answers 401 without a key, for a wrong key and for a project key; 201 {projectId, apiKey} for the admin key', async () => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    expectError(await hookline.api('POST', '/admin/v1/projects', { body: { name: 'p' }, key: null }), 401, 'unauthorized');
    expectError(await hookline.api('POST', '/admin/v1/projects', { body: { name: 'p' }, key: 'nope' }), 401, 'unauthorized');
    expectError(await hookline.api('POST', '/admin/v1/projects', { body: { name: 'p' }, key: API_KEY }), 401, 'unauthorized');

    const created = await hookline.api('POST', '/admin/v1/projects', { body: { name: 'second' }, key: ADMIN_KEY });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ projectId: expect.any(String), apiKey: expect.any(String) });
    expect(created.body.apiKey).not.toBe(API_KEY);
    // The admin key is not a project key.
    expectError(await hookline.api('GET', '/v1/logs/webhook-deliveries', { key: ADMIN_KEY }), 401, 'unauthorized');
    // The new key opens its project.
    expect((await hookline.api('GET', '/v1/logs/webhook-deliveries', { key: created.body.apiKey })).status).toBe(200);
  });

  it.each([
    ['no name', {}],
    ['an empty name', { name: '  ' }],
    ['a name that is not a string', { name: 7 }],
    ['an unknown field', { name: 'p', plan: 'pro' }],
  ])('%s: 400 validation_failed', async (_name, body) => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    expectError(await hookline.api('POST', '/admin/v1/projects', { body, key: ADMIN_KEY }), 400, 'validation_failed');
  });
});

describe('project isolation', () => {
  it("a project's key never sees another project's webhook, deliveries or events (404, not 403)", async () => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ id: 'evt_secret', type: 'service.trigger.event', data: {} });
    const deliveryId = sent.deliveryId!;
    await waitForDeliveryStatus(hookline.client, deliveryId, 'dead_lettered');

    const created = await hookline.api('POST', '/admin/v1/projects', { body: { name: 'other' }, key: ADMIN_KEY });
    const otherKey: string = created.body.apiKey;
    const asOther = (method: string, path: string, body?: unknown) => hookline.api(method, path, { key: otherKey, ...(body === undefined ? {} : { body }) });

    expectError(await asOther('GET', '/v1/webhook'), 404, 'webhook_not_configured');
    expectError(await asOther('GET', '/v1/webhook/secret'), 404, 'webhook_not_configured');
    expectError(await asOther('GET', `/v1/logs/webhook-deliveries/${deliveryId}`), 404, 'delivery_not_found');
    expectError(await asOther('POST', `/v1/logs/webhook-deliveries/${deliveryId}/retry`), 404, 'delivery_not_found');
    expectError(await asOther('POST', '/v1/events/evt_secret/replay'), 404, 'event_not_found');
    expect(await asOther('GET', '/v1/logs/webhook-deliveries')).toMatchObject({ status: 200, body: { data: [], nextCursor: null } });
    expect(await asOther('GET', '/v1/logs/webhook-deliveries?eventId=evt_secret')).toMatchObject({ status: 200, body: { data: [] } });
    expect(await asOther('POST', '/v1/logs/webhook-deliveries/redrive', {})).toMatchObject({ status: 202, body: { redriven: 0 } });

    // The same event id is free in the other project, and its events stay there.
    await hookline.clientFor(otherKey).configureWebhook({ callbackUrl: 'http://127.0.0.1:9/other', status: 'paused', eventTypes: ALL_TYPES });
    const theirs = await asOther('POST', '/v1/events', { id: 'evt_secret', type: 'service.trigger.event', data: { other: true } });
    expect(theirs.status).toBe(202);
    expect(theirs.body.deliveryId).not.toBe(deliveryId);
    const mine = await hookline.client.listDeliveriesPage();
    expect(mine.data.map((delivery) => delivery.id)).toEqual([deliveryId]);
    expect((await hookline.client.getDelivery(deliveryId)).status).toBe('dead_lettered');
    expectError(await hookline.api('GET', `/v1/logs/webhook-deliveries/${theirs.body.deliveryId}`), 404, 'delivery_not_found');
  });
});

describe('ops routes', () => {
  it('GET /healthz answers 200 without a key', async () => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('GET', '/healthz', { key: null });
    expect(answer.status).toBe(200);
  });

  it('GET /metrics answers Prometheus text with the hookline_ metrics, without a key', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');

    const answer = await hookline.api('GET', '/metrics', { key: null });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = String(answer.body);
    for (const name of [
      'hookline_events_ingested_total',
      'hookline_delivery_attempts_total',
      'hookline_deliveries_total',
      'hookline_delivery_attempt_duration_seconds',
      'hookline_live_deliveries',
      'hookline_ready_queue_depth',
      'hookline_scheduled_retries',
      'hookline_dead_lettered_deliveries',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
    expect(text).toMatch(/^hookline_events_ingested_total\{matched="true"\} 1$/m);
    expect(text).toMatch(/^hookline_delivery_attempts_total\{outcome="success"\} 1$/m);
    expect(text).toMatch(/^hookline_deliveries_total\{status="succeeded"\} 1$/m);
  });

  it('an unknown route answers 404 in the error shape', async () => {
    const hookline = await startTestHookline();
    expectError(await hookline.api('GET', '/nope', { key: null }), 404, 'not_found');
  });
});
