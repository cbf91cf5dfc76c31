import { describe, expect, it } from 'vitest';
import { buildHttpServer } from '../../src/http/server.js';
import { ADMIN_KEY, configureReceiver, sampleEvent, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { testDataDir } from '../helpers/temp-dir.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

describe('liveness and readiness', () => {
  it('a ready node answers 200 on /readyz and /healthz', async () => {
    const hookline = await startTestHookline();
    const ready = await hookline.api('GET', '/readyz', { key: null });
    expect(ready).toMatchObject({ status: 200, body: { status: 'ready' } });
    expect((await hookline.api('GET', '/healthz', { key: null })).status).toBe(200);
  });

  it('while draining: /readyz 503 with Retry-After, /healthz still 200, and new events 503 shutting_down with Retry-After', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    // The receiver holds the one attempt until the test has looked at the draining node.
    const receiver = await startReceiver({ respond: async () => (await held, { status: 204 }) });
    const hookline = await startTestHookline({ deliveryTimeoutMs: 10_000 });
    await configureReceiver(hookline, receiver);
    await hookline.client.sendEvent(sampleEvent());
    await waitFor(() => receiver.received.length === 1, { message: 'the attempt to reach the receiver' });

    const closed = hookline.node.close();
    try {
      const readyz = await waitFor(async () => {
        const answer = await hookline.api('GET', '/readyz', { key: null });
        return answer.status === 503 ? answer : null;
      }, { message: '/readyz to answer 503 while draining' });
      expect(readyz.body).toEqual({ status: 'draining' });
      expect(Number(readyz.headers.get('retry-after'))).toBeGreaterThan(0);

      expect((await hookline.api('GET', '/healthz', { key: null })).status).toBe(200);

      const refused = await hookline.api('POST', '/v1/events', { body: sampleEvent() });
      expect(refused.status).toBe(503);
      expect(refused.body.error.code).toBe('shutting_down');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      release();
      await closed;
    }
  });

  it('while draining: retry, redrive, replay and webhook changes answer 503 shutting_down and change nothing', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first event's three attempts fail (a dead letter); the second's attempt is held, so the
    // node stays draining while the test asks.
    const receiver = await startReceiver({ respond: async (_delivery, index) => (index < 3 ? { status: 500 } : (await held, { status: 204 })) });
    const hookline = await startTestHookline({ deliveryTimeoutMs: 10_000 });
    await configureReceiver(hookline, receiver);
    const dead = await hookline.client.sendEvent(sampleEvent());
    await waitForDeliveryStatus(hookline.client, dead.deliveryId!, 'dead_lettered');
    await hookline.client.sendEvent(sampleEvent());
    await waitFor(() => receiver.received.length === 4, { message: 'the held attempt to reach the receiver' });
    const webhookBefore = (await hookline.api('GET', '/v1/webhook')).body;

    const closed = hookline.node.close();
    try {
      await waitFor(async () => ((await hookline.api('GET', '/readyz', { key: null })).status === 503 ? true : null), { message: 'the node to drain' });
      const asks: Array<[string, string, unknown?]> = [
        ['POST', `/v1/logs/webhook-deliveries/${dead.deliveryId}/retry`],
        ['POST', '/v1/logs/webhook-deliveries/redrive', {}],
        ['POST', `/v1/events/${dead.id}/replay`],
        ['PUT', '/v1/webhook', { callbackUrl: `${receiver.url}/other`, status: 'active', eventTypes: ['service.trigger.event'] }],
        ['POST', '/v1/webhook/secret/rotate', { graceSeconds: 0 }],
      ];
      for (const [method, path, body] of asks) {
        const refused = await hookline.api(method, path, body === undefined ? {} : { body });
        expect({ ask: `${method} ${path}`, status: refused.status, code: refused.body.error?.code }).toEqual({ ask: `${method} ${path}`, status: 503, code: 'shutting_down' });
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(refused.body.error.message).toMatch(/draining; .* was not|nothing was/);
      }
      // Nothing changed: the dead letter is still one, with its three attempts, and the webhook is as it was.
      const deadNow = await hookline.client.getDelivery(dead.deliveryId!);
      expect({ status: deadNow.status, attempts: deadNow.attempts }).toEqual({ status: 'dead_lettered', attempts: 3 });
      expect((await hookline.api('GET', '/v1/webhook')).body).toEqual(webhookBefore);
      expect((await hookline.api('GET', '/v1/logs/webhook-deliveries?limit=10')).body.data).toHaveLength(2);
    } finally {
      release();
      await closed;
    }
  });

  it('while draining: a project first asked for since the start (no actor yet) refuses a replay too', async () => {
    const dataDir = testDataDir();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const other = await startReceiver();
    const first = await startTestHookline({ dataDir, adminKey: ADMIN_KEY });
    const created = await first.api('POST', '/admin/v1/projects', { key: ADMIN_KEY, body: { name: 'other' } });
    const otherClient = first.clientFor(created.body.apiKey);
    await configureReceiver(first, other, { client: otherClient });
    const event = await otherClient.sendEvent(sampleEvent());
    await waitForDeliveryStatus(otherClient, event.deliveryId!, 'succeeded');
    await first.close();

    // After the restart the other project has nothing live, so nothing has made its actor yet.
    const receiver = await startReceiver({ respond: async () => (await held, { status: 204 }) });
    const hookline = await startTestHookline({ dataDir, adminKey: ADMIN_KEY, deliveryTimeoutMs: 10_000 });
    await configureReceiver(hookline, receiver);
    await hookline.client.sendEvent(sampleEvent());
    await waitFor(() => receiver.received.length === 1, { message: 'the held attempt to reach the receiver' });
    const closed = hookline.node.close();
    try {
      await waitFor(async () => ((await hookline.api('GET', '/readyz', { key: null })).status === 503 ? true : null), { message: 'the node to drain' });
      const refused = await hookline.api('POST', `/v1/events/${event.id}/replay`, { key: created.body.apiKey });
      expect({ status: refused.status, code: refused.body.error?.code }).toEqual({ status: 503, code: 'shutting_down' });
      expect((await hookline.api('GET', '/v1/logs/webhook-deliveries?limit=10', { key: created.body.apiKey })).body.data).toHaveLength(1);
    } finally {
      release();
      await closed;
    }
  });

  it('a node still starting answers 503 starting on /readyz', async () => {
    const hookline = await startTestHookline();
    const starting = buildHttpServer({ engine: hookline.node.engine, embedded: undefined as never, readiness: () => ({ status: 'starting' }) });
    const answer = await starting.inject({ method: 'GET', url: '/readyz' });
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toEqual({ status: 'starting' });
    expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
    await starting.close();
  });

  it('a node whose NATS connection ended for good answers 503 unavailable on /readyz, with the reason', async () => {
    const hookline = await startTestHookline();
    const reason = 'NATS connection closed for good, NATS ingest has stopped: HOOKLINE_NATS_TOKEN=***: the server refused the token';
    const unavailable = buildHttpServer({ engine: hookline.node.engine, embedded: undefined as never, readiness: () => ({ status: 'unavailable', reason }) });
    const answer = await unavailable.inject({ method: 'GET', url: '/readyz' });
    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toEqual({ status: 'unavailable', reason });
    expect(Number(answer.headers['retry-after'])).toBeGreaterThan(0);
    await unavailable.close();
  });
});
