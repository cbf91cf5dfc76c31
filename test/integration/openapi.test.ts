import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ADMIN_KEY, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { answerMismatch, checkedRoutes, documentedRoutes } from '../helpers/openapi-check.js';
import { startReceiver } from '../helpers/receiver.js';

/**
 * The OpenAPI document: served without a key, the same as docs/openapi.json, covering exactly the
 * routes the server has, and matching real answers (the test helpers check every answer of the
 * integration tests against it; here every documented route is called at least once).
 */

const checkedIn = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');

/**
 * "METHOD /path/{param}" of every API route Fastify serves (not the dashboard's, nor HEAD), read from
 * its route tree: each line is a path segment under the line one level (4 columns) less indented.
 */
function servedRoutes(routeTree: string): string[] {
  const out: string[] = [];
  const parents: string[] = [];
  for (const line of routeTree.split('\n')) {
    const match = /^(.*?)── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = Math.floor(match[1]!.length / 4);
    const path = `${depth === 0 ? '' : parents[depth - 1]}${match[2]}`;
    parents[depth] = path;
    if (!match[3] || path === '/' || path.startsWith('/ui')) continue;
    for (const method of match[3].split(', ')) if (method !== 'HEAD') out.push(`${method} ${path.replace(/:(\w+)/g, '{$1}')}`);
  }
  return out.sort();
}

describe('GET /openapi.json', () => {
  it('answers the checked-in OpenAPI 3.1 document without a key', async () => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('GET', '/openapi.json', { key: null });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect(answer.body.openapi).toBe('3.1.0');
    expect(`${JSON.stringify(answer.body, null, 2)}\n`).toBe(checkedIn);
  });

  it('documents every API route the server has, and only those', async () => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    expect([...documentedRoutes].sort()).toEqual(servedRoutes(hookline.node.http.printRoutes({ commonPrefix: false })));
  });

  it('describes the bearer keys and one error shape', async () => {
    const hookline = await startTestHookline();
    const { body } = await hookline.api('GET', '/openapi.json', { key: null });
    expect(body.components.securitySchemes.projectKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(body.paths['/v1/webhook'].put.security).toEqual([{ projectKey: [] }]);
    expect(body.paths['/healthz'].get.security).toEqual([]);
    expect(body.paths['/v1/webhook'].put.responses['401'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    expect(body.components.schemas.Error.properties.error.required).toEqual(['code', 'message', 'details']);
  });
});

describe('real answers match the document', () => {
  it('an answer of every documented route is checked against it', async () => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    await configureReceiver(hookline, receiver);
    const ok = async (method: string, path: string, options: Parameters<typeof hookline.api>[2] = {}) => {
      const answer = await hookline.api(method, path, options);
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBeLessThan(300);
      return answer.body;
    };

    await ok('PUT', '/v1/webhook', { body: { callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] } });
    await ok('GET', '/v1/webhook');
    await ok('GET', '/v1/webhook/secret');
    const rotated = await ok('POST', '/v1/webhook/secret/rotate', { body: { graceSeconds: 60 } });
    receiver.secret = rotated.secret;
    const sent = await ok('POST', '/v1/events', { body: { id: 'evt_openapi', type: 'service.trigger.event', data: { n: 1 }, metadata: { tenant_id: 't1' } } });
    await ok('POST', '/v1/events/batch', { body: { events: [{ id: 'evt_openapi', type: 'service.trigger.event', data: { n: 1 }, metadata: { tenant_id: 't1' } }, { type: 'service.trigger.disabled', data: {} }] } });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId, 'dead_lettered');
    await ok('GET', '/v1/logs/webhook-deliveries?status=dead_lettered&limit=10');
    await ok('GET', `/v1/logs/webhook-deliveries/${sent.deliveryId}`);
    await ok('POST', '/v1/logs/webhook-deliveries/redrive', { body: { dryRun: true } });
    await ok('POST', '/v1/logs/webhook-deliveries/redrive', { body: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId, 'dead_lettered');
    await ok('POST', `/v1/logs/webhook-deliveries/${sent.deliveryId}/retry`);
    await ok('POST', `/v1/events/${sent.id}/replay`);
    await ok('GET', '/v1/events?eventType=service.trigger.event&limit=1');
    await ok('GET', `/v1/events/${sent.id}`);
    await ok('GET', '/v1/stats/delivery-states');
    await ok('GET', '/v1/logs/rejected-events');
    const link = await ok('POST', '/v1/portal-links', { body: { expiresIn: '1h', readOnly: true } });
    await ok('GET', '/v1/portal-session', { key: new URL(link.url).hash.replace('#portal=', '') });
    await ok('DELETE', '/v1/portal-links');
    await ok('POST', '/admin/v1/projects', { key: ADMIN_KEY, body: { name: 'second' } });
    await ok('GET', '/admin/v1/rejected-events', { key: ADMIN_KEY });
    await ok('GET', '/healthz', { key: null });
    await ok('GET', '/readyz', { key: null });
    await ok('GET', '/metrics', { key: null });
    await ok('GET', '/openapi.json', { key: null });

    expect(documentedRoutes.filter((route) => !checkedRoutes.has(route))).toEqual([]);
  });

  it('error answers match the document too', async () => {
    const hookline = await startTestHookline();
    expect((await hookline.api('GET', '/v1/webhook', { key: null })).status).toBe(401);
    expect((await hookline.api('GET', '/v1/webhook')).status).toBe(404);
    expect((await hookline.api('POST', '/v1/events', { body: '{"type":' })).status).toBe(400);
    expect((await hookline.api('POST', '/v1/events', { body: 'x', headers: { 'content-type': 'text/plain' } })).status).toBe(415);
    expect((await hookline.api('GET', '/v1/logs/webhook-deliveries/dlv_nosuch')).status).toBe(404);
  });
});

describe('the answer check', () => {
  // The check itself must catch drift, or every test above passes vacuously.
  const delivery = {
    id: 'dlv_01KAP0000000000000000000AB',
    eventId: 'evt_1',
    eventType: 'service.trigger.event',
    status: 'pending',
    attempts: 0,
    maxAttempts: 3,
    nextAttemptAt: null,
    createdAt: '2026-11-21T23:03:49.123+00:00',
    updatedAt: '2026-11-21T23:03:49.123+00:00',
    lastAttempt: null,
  };
  const answer = (status: number, body: unknown, contentType = 'application/json; charset=utf-8') => ({ method: 'POST', path: `/v1/logs/webhook-deliveries/${delivery.id}/retry`, status, contentType, body });

  it('accepts a documented answer', () => {
    expect(answerMismatch(answer(202, delivery))).toBeNull();
  });

  it.each([
    ['an undocumented field', answer(202, { ...delivery, extra: 1 }), 'must NOT have additional properties'],
    ['a time in Z', answer(202, { ...delivery, createdAt: '2026-11-21T23:03:49.123Z' }), 'createdAt'],
    ['an unknown status', answer(202, { ...delivery, status: 'failed' }), 'status'],
    ['an undocumented status code', answer(200, delivery), 'status 200 is not documented'],
    ['another media type', answer(202, 'x', 'text/plain'), 'content type text/plain is not documented'],
    ['an error in another shape', answer(409, { message: 'no' }), "must have required property 'error'"],
  ])('refuses %s', (_name, wrong, why) => {
    expect(answerMismatch(wrong)).toContain(why);
  });
});
