import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ALL_TYPES, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * The request and memory limits: per-project API rate limit (429 + Retry-After), the ingest body
 * limit (413, with and without a content-length), and the bound on live deliveries in memory
 * (503 `overloaded` + Retry-After for matching events only). Each answer is the JSON error shape.
 */

function expectError(answer: { status: number; body: any }, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.body).toEqual({ error: { code, message: expect.any(String), details: expect.any(Array) } });
  expect(answer.body.error.message.length).toBeGreaterThan(10);
}

/** Streams `size` bytes as a chunked body (no content-length), so the limit must cut a stream. */
function postChunked(url: string, path: string, apiKey: string, size: number): Promise<{ status: number; body: any; written: number }> {
  return new Promise((resolve, reject) => {
    let written = 0;
    const req = httpRequest(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text), written }));
    });
    req.on('error', reject);
    const chunk = Buffer.from(`{"type":"service.trigger.event","data":{"pad":"${'x'.repeat(16 * 1024)}`);
    const pump = (): void => {
      while (written < size) {
        written += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end('"}}');
    };
    pump();
  });
}

describe('per-project API rate limit', () => {
  it('answers 429 rate_limited with Retry-After beyond the rate, per project, and recovers', async () => {
    // One request per second: the bucket holds one token and refills one per second, so the checks
    // below hold on a loaded machine as long as each follows the previous within a second.
    const hookline = await startTestHookline({ rateLimit: 1 });
    await hookline.node.engine.createProject('other', 'other-key');

    const answers = await Promise.all(Array.from({ length: 20 }, () => hookline.api('GET', '/v1/logs/webhook-deliveries')));
    const limited = answers.filter((answer) => answer.status === 429);
    expect(answers.filter((answer) => answer.status === 200).length).toBeLessThanOrEqual(3);
    expect(limited.length).toBeGreaterThanOrEqual(17);
    for (const answer of limited) {
      expectError(answer, 429, 'rate_limited');
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    // Ingest is limited like every other route.
    expectError(await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: {} } }), 429, 'rate_limited');

    // Another project has its own bucket: its first request passes, its second right after does not.
    expect((await hookline.api('GET', '/v1/logs/webhook-deliveries', { key: 'other-key' })).status).toBe(200);
    expect((await hookline.api('GET', '/v1/logs/webhook-deliveries', { key: 'other-key' })).status).toBe(429);

    // Unauthenticated requests are refused before they can drain anyone's bucket, and ops routes are not limited.
    expect((await hookline.api('GET', '/v1/webhook', { key: 'wrong' })).status).toBe(401);
    expect((await fetch(`${hookline.url}/healthz`)).status).toBe(200);

    // The bucket refills: within about a second the project is served again.
    await waitFor(async () => (await hookline.api('GET', '/v1/logs/webhook-deliveries')).status === 200, { timeoutMs: 5_000, intervalMs: 100, message: 'rate limit to refill' });
  });
});

describe('ingest body limit', () => {
  it('answers 413 payload_too_large over maxBodyBytes, with or without content-length, and stores nothing', async () => {
    const hookline = await startTestHookline({ maxBodyBytes: 4096 });
    const big = { type: 'service.trigger.event', data: { pad: 'x'.repeat(5000) } };
    expectError(await hookline.api('POST', '/v1/events', { body: big }), 413, 'payload_too_large');
    expectError(await hookline.api('PUT', '/v1/webhook', { body: { callbackUrl: `https://example.com/${'a'.repeat(5000)}`, status: 'active', eventTypes: ALL_TYPES } }), 413, 'payload_too_large');

    const chunked = await postChunked(hookline.url, '/v1/events', 'test-key', 1024 * 1024);
    expect(chunked.status).toBe(413);
    expect(chunked.body.error.code).toBe('payload_too_large');

    // Just under the limit is fine, and nothing over it was stored.
    const fits = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: { pad: 'x'.repeat(3900) } } });
    expect(fits.status).toBe(202);
    expect([...hookline.node.engine.store.events.getKeys()]).toHaveLength(1);
    expect((await fetch(`${hookline.url}/healthz`)).status).toBe(200);
  });
});

describe('bound on live deliveries in memory', () => {
  it('answers 503 overloaded with Retry-After for a matching event beyond maxWaitingPerProject; unmatched events are still accepted; room frees as deliveries finish', async () => {
    const receiver = await startReceiver();
    const hookline = await startTestHookline({ maxWaitingPerProject: 3 });
    await configureReceiver(hookline, receiver, { status: 'paused', eventTypes: ['service.trigger.event'] });

    const held: string[] = [];
    for (let n = 0; n < 3; n++) {
      const answer = await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: { n } } });
      expect(answer.status).toBe(202);
      held.push(answer.body.deliveryId);
    }
    const refused = await hookline.api('POST', '/v1/events', { body: { id: 'evt_overflow', type: 'service.trigger.event', data: { n: 3 } } });
    expectError(refused, 503, 'overloaded');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused.body.error.message).toMatch(/HOOKLINE_MAX_WAITING_PER_PROJECT/);
    // Nothing was stored for the refused event: the same id is free once there is room.
    expect(hookline.node.engine.store.getEvent('default', 'evt_overflow')).toBeUndefined();

    // An event no webhook wants makes no delivery and so is still accepted.
    const unmatched = await hookline.api('POST', '/v1/events', { body: { type: 'service.connected_account.expired', data: {} } });
    expect(unmatched.status).toBe(202);
    expect(unmatched.body.deliveryId).toBeNull();
    // The rest of the API answers as usual.
    expect((await hookline.api('GET', '/v1/logs/webhook-deliveries')).status).toBe(200);
    const metrics = await (await fetch(`${hookline.url}/metrics`)).text();
    expect(metrics).toMatch(/hookline_live_deliveries 3/);

    // Activating drains the held deliveries; then the refused event is accepted on its retry.
    await configureReceiver(hookline, receiver, { status: 'active', eventTypes: ['service.trigger.event'] });
    for (const deliveryId of held) await waitForDeliveryStatus(hookline.client, deliveryId, 'succeeded');
    expect(receiver.received).toHaveLength(3);
    const again = await waitFor(
      async () => {
        const answer = await hookline.api('POST', '/v1/events', { body: { id: 'evt_overflow', type: 'service.trigger.event', data: { n: 3 } } });
        return answer.status === 202 ? answer : null;
      },
      { timeoutMs: 3_000, intervalMs: 25, message: 'room for the refused event' },
    );
    await waitForDeliveryStatus(hookline.client, again.body.deliveryId, 'succeeded');
  });
});
