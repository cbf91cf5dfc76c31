import { describe, expect, it } from 'vitest';
import { ALL_TYPES, ISO_WITH_OFFSET, startTestHookline } from '../helpers/hookline.js';

/** Routes of the webhook configuration and its secret (DESIGN.md, wire contract v1). */

const callbackUrl = 'http://127.0.0.1:9/hooks';
const validConfig = { callbackUrl, status: 'active', eventTypes: ['service.trigger.event'] };

function expectError(answer: { status: number; body: any }, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.body).toEqual({ error: { code, message: expect.any(String), details: expect.any(Array) } });
  expect(answer.body.error.message.length).toBeGreaterThan(0);
}

describe('PUT and GET /v1/webhook', () => {
  it('answers 404 webhook_not_configured before the first PUT, for the config and for its secret', async () => {
    const hookline = await startTestHookline();
    expectError(await hookline.api('GET', '/v1/webhook'), 404, 'webhook_not_configured');
    expectError(await hookline.api('GET', '/v1/webhook/secret'), 404, 'webhook_not_configured');
    expectError(await hookline.api('POST', '/v1/webhook/secret/rotate', { body: {} }), 404, 'webhook_not_configured');
  });

  it('PUT answers 200 with the whole config, GET answers the same, and later PUTs keep createdAt and the secret', async () => {
    const hookline = await startTestHookline();
    const put = await hookline.api('PUT', '/v1/webhook', { body: validConfig });
    expect(put.status).toBe(200);
    expect(put.body).toEqual({ ...validConfig, disabledReason: null, headers: {}, filter: null, ordering: 'unordered', operationalUrl: null, maxConcurrency: null, rateLimitPerSecond: null, retrySchedule: null, sendTraceparent: false, circuit: { state: 'closed', consecutiveFailures: 0, openedAt: null, nextProbeAt: null }, createdAt: expect.stringMatching(ISO_WITH_OFFSET), updatedAt: expect.stringMatching(ISO_WITH_OFFSET) });
    expect(await hookline.client.getWebhook()).toEqual(put.body);

    const { secret } = await hookline.client.getSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);

    const second = await hookline.client.configureWebhook({ callbackUrl: `${callbackUrl}/2`, status: 'paused', eventTypes: ALL_TYPES });
    expect(second).toMatchObject({ callbackUrl: `${callbackUrl}/2`, status: 'paused', eventTypes: ALL_TYPES, createdAt: put.body.createdAt });
    expect(Date.parse(second.updatedAt)).toBeGreaterThanOrEqual(Date.parse(put.body.updatedAt));
    expect((await hookline.client.getSecret()).secret).toBe(secret);
  });

  it.each([
    ['no body fields', {}],
    ['callbackUrl missing', { status: 'active', eventTypes: ['service.trigger.event'] }],
    ['status missing', { callbackUrl, eventTypes: ['service.trigger.event'] }],
    ['eventTypes missing', { callbackUrl, status: 'active' }],
    ['status outside active/paused', { ...validConfig, status: 'disabled' }],
    ['empty eventTypes', { ...validConfig, eventTypes: [] }],
    ['an unknown event type', { ...validConfig, eventTypes: ['service.trigger.event', 'user.created'] }],
    ['a relative callbackUrl', { ...validConfig, callbackUrl: '/hooks' }],
    ['a non-http callbackUrl', { ...validConfig, callbackUrl: 'ftp://example.com/hooks' }],
    ['an unknown field', { ...validConfig, secret: 'whsec_x' }],
    ['an array body', [validConfig]],
  ])('PUT with %s: 400 validation_failed with details', async (_name, body) => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('PUT', '/v1/webhook', { body });
    expectError(answer, 400, 'validation_failed');
    expect(answer.body.error.details.length).toBeGreaterThan(0);
    expectError(await hookline.api('GET', '/v1/webhook'), 404, 'webhook_not_configured');
  });

  it('PUT with invalid JSON: 400 invalid_json', async () => {
    const hookline = await startTestHookline();
    expectError(await hookline.api('PUT', '/v1/webhook', { body: '{"callbackUrl":' }), 400, 'invalid_json');
  });

  it('maxConcurrency and rateLimitPerSecond: stored and shown as set, cleared when left out, null as left out', async () => {
    const hookline = await startTestHookline();
    const put = await hookline.api('PUT', '/v1/webhook', { body: { ...validConfig, maxConcurrency: 50, rateLimitPerSecond: 100_000 } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ maxConcurrency: 50, rateLimitPerSecond: 100_000 });
    expect((await hookline.api('GET', '/v1/webhook')).body).toEqual(put.body);
    expect(await hookline.client.configureWebhook({ ...validConfig, status: 'active', eventTypes: ALL_TYPES, maxConcurrency: 1, rateLimitPerSecond: 1 })).toMatchObject({ maxConcurrency: 1, rateLimitPerSecond: 1 });
    // A PUT replaces the configuration: left out, or null, is no limit.
    expect((await hookline.api('PUT', '/v1/webhook', { body: validConfig })).body).toMatchObject({ maxConcurrency: null, rateLimitPerSecond: null });
    expect((await hookline.api('PUT', '/v1/webhook', { body: { ...validConfig, maxConcurrency: null, rateLimitPerSecond: null } })).body).toMatchObject({ maxConcurrency: null, rateLimitPerSecond: null });
    expect(await hookline.client.getWebhook()).toMatchObject({ maxConcurrency: null, rateLimitPerSecond: null });
  });

  it('refuses a maxConcurrency or rateLimitPerSecond outside its range: 400 validation_failed naming the field, the range and the value', async () => {
    // The top of maxConcurrency is the node's own setting.
    const hookline = await startTestHookline({ endpointConcurrency: 8 });
    const concurrency = 'must be a whole number from 1 to 8 (HOOKLINE_ENDPOINT_CONCURRENCY), got';
    const rate = 'must be a whole number from 1 to 100000, got';
    const cases: Array<[string, unknown, string]> = [
      ['maxConcurrency', 0, `${concurrency} 0`],
      ['maxConcurrency', -1, `${concurrency} -1`],
      ['maxConcurrency', 1.5, `${concurrency} 1.5`],
      ['maxConcurrency', '2', `${concurrency} "2"`],
      ['maxConcurrency', 9, `${concurrency} 9`],
      ['rateLimitPerSecond', 0, `${rate} 0`],
      ['rateLimitPerSecond', -5, `${rate} -5`],
      ['rateLimitPerSecond', 'NaN', `${rate} "NaN"`],
      ['rateLimitPerSecond', 2.5, `${rate} 2.5`],
      ['rateLimitPerSecond', 100_001, `${rate} 100001`],
    ];
    for (const [field, value, message] of cases) {
      const answer = await hookline.api('PUT', '/v1/webhook', { body: { ...validConfig, [field]: value } });
      expectError(answer, 400, 'validation_failed');
      expect(answer.body.error.details, `${field}: ${JSON.stringify(value)}`).toEqual([{ path: `body.${field}`, message }]);
      expect(answer.body.error.message).toBe(`invalid body: body.${field}: ${message}`);
    }
    expectError(await hookline.api('GET', '/v1/webhook'), 404, 'webhook_not_configured');
    expect((await hookline.api('PUT', '/v1/webhook', { body: { ...validConfig, maxConcurrency: 8 } })).body).toMatchObject({ maxConcurrency: 8 });
  });

  it('refuses a loopback callbackUrl unless private networks are allowed', async () => {
    const hookline = await startTestHookline({ allowPrivateNetworks: false });
    const answer = await hookline.api('PUT', '/v1/webhook', { body: validConfig });
    expectError(answer, 400, 'validation_failed');
    expect(answer.body.error.details).toEqual([expect.objectContaining({ path: 'body.callbackUrl' })]);
  });
});

describe('secret rotation', () => {
  it('answers the new secret and an ISO previousSecretExpiresAt, default grace one day', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl, status: 'active', eventTypes: ALL_TYPES });
    const { secret: first } = await hookline.client.getSecret();

    const before = Date.now();
    const rotated = await hookline.api('POST', '/v1/webhook/secret/rotate', { body: {} });
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ secret: expect.stringMatching(/^whsec_/), previousSecretExpiresAt: expect.stringMatching(ISO_WITH_OFFSET) });
    expect(rotated.body.secret).not.toBe(first);
    const expiresIn = Date.parse(rotated.body.previousSecretExpiresAt) - before;
    expect(expiresIn).toBeGreaterThanOrEqual(86_400_000 - 1_000);
    expect(expiresIn).toBeLessThanOrEqual(86_400_000 + 5_000);
    expect((await hookline.client.getSecret()).secret).toBe(rotated.body.secret);

    const immediate = await hookline.client.rotateSecret({ graceSeconds: 0 });
    expect(Math.abs(Date.parse(immediate.previousSecretExpiresAt) - Date.now())).toBeLessThan(5_000);
  });

  it.each([
    ['a negative graceSeconds', { graceSeconds: -1 }],
    ['a fractional graceSeconds', { graceSeconds: 1.5 }],
    ['a string graceSeconds', { graceSeconds: '60' }],
    ['an unknown field', { grace: 60 }],
  ])('rotate with %s: 400 validation_failed', async (_name, body) => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl, status: 'active', eventTypes: ALL_TYPES });
    expectError(await hookline.api('POST', '/v1/webhook/secret/rotate', { body }), 400, 'validation_failed');
  });
});

describe('authentication of /v1 routes', () => {
  const routes: Array<[string, string, unknown?]> = [
    ['PUT', '/v1/webhook', validConfig],
    ['GET', '/v1/webhook'],
    ['GET', '/v1/webhook/secret'],
    ['POST', '/v1/webhook/secret/rotate', {}],
    ['POST', '/v1/events', { type: 'service.trigger.event', data: {} }],
    ['GET', '/v1/logs/webhook-deliveries'],
    ['GET', '/v1/logs/webhook-deliveries/dlv_00000000000000000000000000'],
    ['POST', '/v1/logs/webhook-deliveries/dlv_00000000000000000000000000/retry'],
    ['POST', '/v1/logs/webhook-deliveries/redrive', {}],
    ['POST', '/v1/events/evt_1/replay'],
  ];

  it('answers 401 unauthorized without a key, with a wrong key and with a malformed header, on every route', async () => {
    const hookline = await startTestHookline();
    for (const [method, path, body] of routes) {
      const options = body === undefined ? {} : { body };
      expectError(await hookline.api(method, path, { ...options, key: null }), 401, 'unauthorized');
      expectError(await hookline.api(method, path, { ...options, key: 'wrong-key' }), 401, 'unauthorized');
      expectError(await hookline.api(method, path, { ...options, key: null, headers: { authorization: 'Basic dGVzdC1rZXk6' } }), 401, 'unauthorized');
    }
    expectError(await hookline.api('GET', '/v1/webhook'), 404, 'webhook_not_configured');
  });
});
