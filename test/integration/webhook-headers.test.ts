import { describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/actors/engine.js';
import { HooklineStore } from '../../src/store/store.js';
import { ALL_TYPES, API_KEY, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { testDataDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/** Issue 15: custom headers sent with every delivery, validated at PUT, kept across restarts. */

const callbackUrl = 'http://127.0.0.1:9/hooks';
const base = { callbackUrl, status: 'active', eventTypes: ['service.trigger.event'] };

describe('custom headers', () => {
  it('are shown as set, sent with every delivery beside a signature that still verifies, and kept across a restart', async () => {
    const dataDir = testDataDir();
    const receiver = await startReceiver();
    const first = await startTestHookline({ dataDir });
    const headers = { 'X-Tenant': 'acme', Authorization: 'Bearer receiver-token', 'User-Agent': 'acme-hooks/1' };
    await configureReceiver(first, receiver);
    const config = await first.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES, headers });
    expect(config.headers).toEqual(headers);
    expect((await first.client.getWebhook()).headers).toEqual(headers);

    const sent = await first.client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
    await waitForDeliveryStatus(first.client, sent.deliveryId!, 'succeeded');
    const [delivery] = receiver.received;
    expect(delivery!.verified).toBe(true);
    expect(delivery!.headers).toMatchObject({ 'x-tenant': 'acme', authorization: 'Bearer receiver-token', 'user-agent': 'acme-hooks/1', 'content-type': 'application/json' });
    await first.close();

    const second = await startTestHookline({ dataDir });
    expect((await second.client.getWebhook()).headers).toEqual(headers);
    const again = await second.client.sendEvent({ type: 'service.trigger.event', data: { n: 2 } });
    await waitForDeliveryStatus(second.client, again.deliveryId!, 'succeeded');
    expect(receiver.received[1]!.headers['x-tenant']).toBe('acme');

    // PUT replaces the configuration: without `headers` they are cleared.
    expect((await second.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES })).headers).toEqual({});
    const third = await second.client.sendEvent({ type: 'service.trigger.event', data: { n: 3 } });
    await waitForDeliveryStatus(second.client, third.deliveryId!, 'succeeded');
    expect(receiver.received[2]!.headers['x-tenant']).toBeUndefined();
  });

  it.each([
    ['a webhook-* name', { 'Webhook-Id': 'x' }, 'body.headers.Webhook-Id'],
    ['content-type', { 'content-type': 'text/plain' }, 'body.headers.content-type'],
    ['content-length', { 'Content-Length': '1' }, 'body.headers.Content-Length'],
    ['host', { Host: 'example.com' }, 'body.headers.Host'],
    ['a hop-by-hop header', { 'Transfer-Encoding': 'chunked' }, 'body.headers.Transfer-Encoding'],
    ['connection', { connection: 'close' }, 'body.headers.connection'],
    ['a name with a space', { 'X Tenant': 'acme' }, 'body.headers.X Tenant'],
    ['a value with CR LF', { 'X-Tenant': 'acme\r\nX-Injected: 1' }, 'body.headers.X-Tenant'],
    ['a value with LF', { 'X-Tenant': 'acme\nmore' }, 'body.headers.X-Tenant'],
    ['a name given twice', { 'X-A': '1', 'x-a': '2' }, 'body.headers.x-a'],
    ['a non-string value', { 'X-A': 1 }, 'body.headers.X-A'],
    ['21 headers', Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H${i}`, 'v'])), 'body.headers'],
  ])('refuses %s with 400 pointing at it', async (_name, headers, path) => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('PUT', '/v1/webhook', { body: { ...base, headers } });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('validation_failed');
    expect(answer.body.error.details).toContainEqual(expect.objectContaining({ path }));
    expect((await hookline.api('GET', '/v1/webhook')).status).toBe(404);
  });

  it('takes 20 headers', async () => {
    const hookline = await startTestHookline();
    const headers = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`X-H${i}`, `v ${i}\twith tab`]));
    expect((await hookline.api('PUT', '/v1/webhook', { body: { ...base, headers } })).body.headers).toEqual(headers);
  });

  it('a webhook record stored before these fields existed reads with the defaults and still delivers', async () => {
    const dataDir = testDataDir();
    const receiver = await startReceiver();
    const store = new HooklineStore({ path: dataDir });
    await store.createProject({ id: 'default', name: 'default', createdAt: 1 }, hashApiKey(API_KEY));
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    // Exactly the fields a record had before issue 15.
    const old = { callbackUrl: receiver.url, state: 'active' as const, eventTypes: ALL_TYPES, createdAt: 1, updatedAt: 1, secrets: [{ secret, createdAt: 1, expiresAt: null }], failingSince: null, disabledAt: null, disabledReason: null };
    await store.putWebhook('default', old);
    await store.close();

    const hookline = await startTestHookline({ dataDir });
    const config = await hookline.api('GET', '/v1/webhook');
    expect(config.body).toMatchObject({ callbackUrl: receiver.url, status: 'active', headers: {} });
    receiver.secret = secret;
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    await waitFor(() => receiver.received[0]?.verified, { message: 'a verified delivery' });
  });
});
