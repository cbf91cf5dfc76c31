import { connect } from 'node:net';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { ADMIN_KEY, ALL_TYPES, API_KEY, sampleEvent, startTestHookline } from '../helpers/hookline.js';
import { testDataDir } from '../helpers/temp-dir.js';

/**
 * The HTTP boundary: what a request gets before or around its route (the log of unexpected
 * failures, keys and unknown routes checked before the body, bodies the routes do not take,
 * requests Node cannot parse), always in the error shape and as the OpenAPI document says.
 */

function expectError(answer: { status: number; body: any }, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(answer.body).toEqual({ error: { code, message: expect.any(String), details: expect.any(Array) } });
}

describe('unexpected failures', () => {
  it('a route throwing a plain Error answers 500 internal_error and logs the error once, at error, with the request id the answer names', async () => {
    const dataDir = testDataDir();
    const failOnce = async () => {
      const lines: Array<Record<string, any>> = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
      const hookline = await startTestHookline({ dataDir }, { logger });
      vi.spyOn(hookline.node.engine, 'readDelivery').mockImplementation(() => {
        throw new Error('the disk is on fire');
      });
      const answer = await hookline.api('GET', '/v1/logs/webhook-deliveries/dlv_any');
      await hookline.close();
      expectError(answer, 500, 'internal_error');
      const errors = lines.filter((line) => line.level >= 50);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ level: 50, reqId: expect.any(String), err: { message: 'the disk is on fire' } });
      const { reqId } = errors[0]!;
      expect(answer.body.error.message).toBe(`internal error; the server log has the details under reqId ${reqId}`);
      expect(answer.body.error.details).toEqual([{ message: `the line with "reqId":"${reqId}" in the server log has the details`, reqId }]);
      return reqId as string;
    };

    const first = await failOnce();
    // The first request after a restart on the same data directory gets an id of its own.
    const afterRestart = await failOnce();
    expect(first).toMatch(/^[0-9a-f]{10}-1$/);
    expect(afterRestart).toMatch(/^[0-9a-f]{10}-1$/);
    expect(afterRestart).not.toBe(first);
  });
});

describe('every 5xx answer names its request id', () => {
  /** A Hookline whose log lines are kept, and whose event appends fail while `failing` (the changelog append of a cluster node, as in cluster-replication). */
  async function hooklineWithLog(overrides: Parameters<typeof startTestHookline>[0] = {}) {
    const lines: Array<Record<string, any>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const hookline = await startTestHookline(overrides, { logger });
    const appends = { failing: false };
    hookline.node.engine.store.replicator = {
      async project() {},
      async delivery() {},
      async deliverySteps() {},
      async webhook() {},
      async event() {
        if (appends.failing) throw new Error('changelog append timed out');
      },
    };
    return { hookline, appends, errorLines: () => lines.filter((line) => line.level >= 50) };
  }

  it('503 storage_unavailable names the reqId of the line logged with its cause, as 500 does; a batch refused whole is logged once', async () => {
    const { hookline, appends, errorLines } = await hooklineWithLog();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/hook', status: 'paused', eventTypes: ALL_TYPES });
    appends.failing = true;

    const refused = await hookline.api('POST', '/v1/events', { body: sampleEvent() });
    expectError(refused, 503, 'storage_unavailable');
    expect(errorLines()).toHaveLength(1);
    const { reqId } = errorLines()[0]!;
    expect(errorLines()[0]).toMatchObject({ reqId: expect.stringMatching(/^[0-9a-f]{10}-\d+$/), err: { message: expect.stringContaining('changelog append timed out') } });
    expect(refused.body.error.message).toBe(`the event could not be stored durably and was not accepted; send it again; the server log has the details under reqId ${reqId}`);
    expect(refused.body.error.details).toEqual([{ message: `the line with "reqId":"${reqId}" in the server log has the details`, reqId }]);

    const batch = await hookline.api('POST', '/v1/events/batch', { body: { events: [sampleEvent(), sampleEvent()] } });
    expectError(batch, 503, 'storage_unavailable');
    expect(errorLines()).toHaveLength(2);
    expect(batch.body.error.details[0].reqId).toBe(errorLines()[1]!.reqId);
    expect(batch.body.error.details[0].reqId).not.toBe(reqId);
    await hookline.close();
  });

  it('a back-pressure 503 (overloaded) names its reqId too, and is not logged per request', async () => {
    const { hookline, errorLines } = await hooklineWithLog({ maxWaitingPerProject: 1 });
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/hook', status: 'paused', eventTypes: ALL_TYPES });
    expect((await hookline.api('POST', '/v1/events', { body: sampleEvent() })).status).toBe(202);

    const refused = await hookline.api('POST', '/v1/events', { body: sampleEvent() });
    expectError(refused, 503, 'overloaded');
    const reqId = refused.body.error.details[0]?.reqId as string;
    expect(reqId).toMatch(/^[0-9a-f]{10}-\d+$/);
    expect(refused.body.error.message).toMatch(new RegExp(`HOOKLINE_MAX_WAITING_PER_PROJECT.* \\(reqId ${reqId}\\)$`));
    expect(refused.body.error.details).toEqual([
      { message: 'the id of this request; a refusal to retry is not logged per request in the server log', reqId },
      { message: expect.stringMatching(/^project default has 1 delivery waiting/), projectId: 'default', waiting: 1, limit: 1 },
    ]);
    expect(errorLines()).toEqual([]);
    await hookline.close();
  });
});

/** Bodies a route would refuse once read: each must lose to the key check or to the missing route. */
const BAD_BODIES = [
  ['malformed JSON', { body: '{bad' }],
  ['text/plain', { body: 'hello', headers: { 'content-type': 'text/plain' } }],
  ['a body over 256 KB', { body: `{"name":"${'x'.repeat(300 * 1024)}"}` }],
] as const;

describe('keys and routes are checked before the body', () => {
  it.each(BAD_BODIES)('admin route, HOOKLINE_ADMIN_KEY unset, %s: 404 not_found', async (_name, request) => {
    const hookline = await startTestHookline();
    expectError(await hookline.api('POST', '/admin/v1/projects', { ...request, key: null }), 404, 'not_found');
  });

  it.each(BAD_BODIES)('admin route, no key or a wrong key, %s: 401 unauthorized', async (_name, request) => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    expectError(await hookline.api('POST', '/admin/v1/projects', { ...request, key: null }), 401, 'unauthorized');
    expectError(await hookline.api('POST', '/admin/v1/projects', { ...request, key: API_KEY }), 401, 'unauthorized');
  });

  it.each(BAD_BODIES)('project route, no key, %s: 401 unauthorized', async (_name, request) => {
    const hookline = await startTestHookline();
    expectError(await hookline.api('POST', '/v1/events', { ...request, key: null }), 401, 'unauthorized');
    expectError(await hookline.api('PUT', '/v1/webhook', { ...request, key: 'wrong' }), 401, 'unauthorized');
  });

  it.each(BAD_BODIES)('unknown route, %s: 404 not_found, with or without a key', async (_name, request) => {
    const hookline = await startTestHookline();
    for (const key of [null, API_KEY]) {
      expectError(await hookline.api('POST', '/v1/nope', { ...request, key }), 404, 'not_found');
      expectError(await hookline.api('DELETE', '/v1/webhook', { ...request, key }), 404, 'not_found');
      expectError(await hookline.api('POST', '/nope', { ...request, key }), 404, 'not_found');
    }
  });
});

describe('bodies the routes do not need', () => {
  const EMPTY_JSON = { body: '', headers: { 'content-type': 'application/json' } };

  it('an empty JSON body is no body: optional bodies take their defaults, required ones get validation_failed', async () => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/hook', status: 'paused', eventTypes: ALL_TYPES });

    const rotated = await hookline.api('POST', '/v1/webhook/secret/rotate', EMPTY_JSON);
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', EMPTY_JSON)).toMatchObject({ status: 202, body: { redriven: 0 } });

    for (const [method, path, key] of [['POST', '/v1/events', API_KEY], ['PUT', '/v1/webhook', API_KEY], ['POST', '/admin/v1/projects', ADMIN_KEY]] as const) {
      const answer = await hookline.api(method, path, { ...EMPTY_JSON, key });
      expectError(answer, 400, 'validation_failed');
      expect(answer.body.error.details).toEqual([{ path: 'body', message: expect.stringContaining('got nothing') }]);
    }
  });

  const IGNORED_BODIES = [...BAD_BODIES, ['an empty JSON body', EMPTY_JSON], ['a form', { body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } }]] as const;

  it.each(IGNORED_BODIES)('retry and replay take no body and ignore %s', async (_name, request) => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/hook', status: 'paused', eventTypes: ALL_TYPES });
    const { id } = await hookline.client.sendEvent(sampleEvent());

    const replayed = await hookline.api('POST', `/v1/events/${id}/replay`, request);
    expect(replayed.status).toBe(202);
    expect(replayed.body.deliveryId).toMatch(/^dlv_/);
    expectError(await hookline.api('POST', '/v1/logs/webhook-deliveries/dlv_nosuch/retry', request), 404, 'delivery_not_found');
    // The key is still checked first.
    expectError(await hookline.api('POST', `/v1/events/${id}/replay`, { ...request, key: null }), 401, 'unauthorized');
  });
});

/** Writes `request` on a fresh TCP connection and reads until the server closes it. */
function rawExchange(url: string, request: string): Promise<{ status: number; headers: string; body: any }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(request));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(body) });
    });
  });
}

describe('requests that are not what they claim', () => {
  it.each([
    ['not HTTP at all', 400, 'malformed_request', 'HELLO THERE\r\n\r\n'],
    ['a header line without a colon', 400, 'malformed_request', 'GET /healthz HTTP/1.1\r\nhost: x\r\nno colon here\r\n\r\n'],
    ['headers over 16 KB', 431, 'headers_too_large', `GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`],
  ])('%s: %i %s in the error shape, JSON, connection closed', async (_name, status, code, request) => {
    const hookline = await startTestHookline();
    const answer = await rawExchange(hookline.url, request);
    expectError(answer, status, code);
    expect(answer.headers).toContain('content-type: application/json');
    expect(answer.headers).toContain('connection: close');
  });

  it.each([
    ['in data', '{"type":"service.trigger.event","data":{"a":{"__proto__":{"admin":true}}}}', 'body.data.a.__proto__'],
    ['escaped', '{"type":"service.trigger.event","data":{"\\u005f_proto__":1}}', 'body.data.__proto__'],
    ['at the top', '{"__proto__":{},"type":"service.trigger.event","data":{}}', 'body.__proto__'],
    ['as constructor.prototype', '{"type":"service.trigger.event","data":{"constructor":{"prototype":{}}}}', 'body.data.constructor.prototype'],
  ])('valid JSON with a prototype key %s: 400 validation_failed naming the key and where it is', async (_name, body, path) => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('POST', '/v1/events', { body });
    expectError(answer, 400, 'validation_failed');
    expect(answer.body.error.details).toEqual([{ path, message: expect.stringMatching(/^the key "(__proto__|constructor\.prototype)" is not accepted/) }]);
  });

  it('a key merely named constructor, and malformed JSON, are told apart', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/hook', status: 'paused', eventTypes: ALL_TYPES });
    expect((await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: { constructor: 'Object', proto: 1 } } })).status).toBe(202);
    const malformed = await hookline.api('POST', '/v1/events', { body: '{"type":' });
    expectError(malformed, 400, 'invalid_json');
    expect(malformed.body.error.message).toMatch(/^the body is not valid JSON: /);
  });
});
