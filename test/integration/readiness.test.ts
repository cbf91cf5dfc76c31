import { describe, expect, it } from 'vitest';
import { buildHttpServer } from '../../src/http/server.js';
import { configureReceiver, sampleEvent, startTestHookline } from '../helpers/hookline.js';
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
