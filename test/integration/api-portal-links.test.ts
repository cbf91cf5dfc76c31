import { describe, expect, it } from 'vitest';
import { openTable } from '../../src/store/tables.js';
import { ADMIN_KEY, configureReceiver, startTestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/** Portal links on one node: made with the API key, the dashboard's credential until they expire or are revoked. */

/** The token a link's URL carries in its fragment. */
function tokenOf(url: string): string {
  const { hash } = new URL(url);
  expect(hash).toMatch(/^#portal=hlp_[A-Za-z0-9_-]{43}$/);
  return hash.slice('#portal='.length);
}

describe('POST /v1/portal-links', () => {
  it('answers a dashboard URL whose token opens the project, and keeps only its hash', async () => {
    const hookline = await startTestHookline();
    const before = Date.now();
    const created = await hookline.api('POST', '/v1/portal-links', { body: {} });
    expect(created.status).toBe(201);
    const url = new URL(created.body.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${hookline.url}/ui/portal`);
    expect(url.search).toBe('');
    const expiresAt = Date.parse(created.body.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3600_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3600_000);

    const token = tokenOf(created.body.url);
    const session = await hookline.api('GET', '/v1/portal-session', { key: token });
    expect(session).toMatchObject({ status: 200, body: { projectId: 'default', readOnly: false, expiresAt: created.body.expiresAt } });
    expect((await hookline.api('GET', '/v1/portal-session')).body).toEqual({ projectId: 'default', readOnly: false, expiresAt: null });
    // A read-write link changes things like the key does.
    const receiver = await startReceiver();
    expect((await hookline.api('PUT', '/v1/webhook', { key: token, body: { callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] } })).status).toBe(200);

    // The stored record holds the token's hash, never the token.
    const stored = [...openTable(hookline.node.engine.store.root, 'portal-links').getRange()];
    expect(stored).toHaveLength(1);
    expect(JSON.stringify(stored)).not.toContain(token);
  });

  it('opens only its own project', async () => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    const other = await hookline.api('POST', '/admin/v1/projects', { key: ADMIN_KEY, body: { name: 'other' } });
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const link = await hookline.api('POST', '/v1/portal-links', { key: other.body.apiKey, body: { readOnly: true } });
    const token = tokenOf(link.body.url);
    expect((await hookline.api('GET', '/v1/portal-session', { key: token })).body.projectId).toBe(other.body.projectId);
    expect((await hookline.api('GET', '/v1/webhook', { key: token })).status).toBe(404);
    expect((await hookline.api('GET', '/v1/webhook')).status).toBe(200);
  });

  it.each([
    [{ expiresIn: 'soon' }, 'body.expiresIn'],
    [{ expiresIn: '-1h' }, 'body.expiresIn'],
    [{ expiresIn: '0s' }, 'body.expiresIn'],
    [{ expiresIn: '8d' }, 'body.expiresIn'],
    [{ expiresIn: 3600 }, 'body.expiresIn'],
    [{ readOnly: 'yes' }, 'body.readOnly'],
    [{ readonly: true }, 'body'],
  ])('answers 400 naming the field for %j', async (body, path) => {
    const hookline = await startTestHookline();
    const answer = await hookline.api('POST', '/v1/portal-links', { body });
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('validation_failed');
    expect(answer.body.error.details.map((detail: { path: string }) => detail.path)).toContain(path);
  });

  it('takes 7d at most, and a portal link cannot make or revoke links', async () => {
    const hookline = await startTestHookline();
    const longest = await hookline.api('POST', '/v1/portal-links', { body: { expiresIn: '7d' } });
    expect(longest.status).toBe(201);
    const token = tokenOf(longest.body.url);
    // However the path is spelled: `%2D` is the same route.
    for (const [method, path] of [['POST', '/v1/portal-links'], ['POST', '/v1/portal%2Dlinks'], ['DELETE', '/v1/portal-links'], ['DELETE', '/v1/portal-links?all=1']] as const) {
      const answer = await hookline.api(method, path, { key: token, ...(method === 'POST' ? { body: {} } : {}) });
      expect(answer.status).toBe(403);
      expect(answer.body.error.code).toBe('forbidden');
    }
  });
});

describe('a read-only link', () => {
  it('reads everything the dashboard reads, and every write answers 403', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const token = tokenOf((await hookline.api('POST', '/v1/portal-links', { body: { readOnly: true } })).body.url);

    for (const path of ['/v1/webhook', '/v1/webhook/secret', '/v1/stats/delivery-states', '/v1/logs/webhook-deliveries', `/v1/logs/webhook-deliveries/${sent.deliveryId}`, '/v1/events', `/v1/events/${sent.id}`]) {
      expect((await hookline.api('GET', path, { key: token })).status, path).toBe(200);
    }
    expect((await hookline.api('GET', '/v1/portal-session', { key: token })).body.readOnly).toBe(true);

    const writes: [string, string, unknown][] = [
      ['PUT', '/v1/webhook', { callbackUrl: 'https://example.com/hook', status: 'paused', eventTypes: ['service.trigger.event'] }],
      ['POST', '/v1/webhook/secret/rotate', {}],
      ['POST', '/v1/events', { type: 'service.trigger.event', data: {} }],
      ['POST', '/v1/events/batch', { events: [{ type: 'service.trigger.event', data: {} }] }],
      ['POST', `/v1/logs/webhook-deliveries/${sent.deliveryId}/retry`, undefined],
      ['POST', '/v1/logs/webhook-deliveries/redrive', { dryRun: true }],
      ['POST', `/v1/events/${sent.id}/replay`, undefined],
    ];
    const webhookBefore = (await hookline.client.getWebhook()).updatedAt;
    for (const [method, path, body] of writes) {
      const answer = await hookline.api(method, path, { key: token, ...(body !== undefined ? { body } : {}) });
      expect(answer.status, `${method} ${path}`).toBe(403);
      expect(answer.body.error.code).toBe('forbidden');
    }
    expect((await hookline.client.getWebhook()).updatedAt).toBe(webhookBefore);
    expect((await hookline.client.listDeliveriesPage()).data).toHaveLength(1);
  });
});

describe('expiry and revocation', () => {
  it('a link stops opening the project once it expires', async () => {
    const hookline = await startTestHookline();
    const before = Date.now();
    const created = await hookline.api('POST', '/v1/portal-links', { body: { expiresIn: '1s' } });
    expect(Date.parse(created.body.expiresAt)).toBeGreaterThanOrEqual(before + 1000);
    expect(Date.parse(created.body.expiresAt)).toBeLessThanOrEqual(Date.now() + 1000);
    const token = tokenOf(created.body.url);
    // Not asked whether it works first: on a loaded machine the second may already have passed
    // (the other tests show live links work); the wait below ends at the expiry, not after a sleep.
    await waitFor(async () => (await hookline.api('GET', '/v1/stats/delivery-states', { key: token })).status === 401, { message: 'the 1s link to expire' });
    const answer = await hookline.api('GET', '/v1/portal-session', { key: token });
    expect(answer.status).toBe(401);
    expect(answer.body.error.message).toMatch(/expired or was revoked/);
  });

  it('DELETE /v1/portal-links revokes every link of the project, and only of that project', async () => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    const other = await hookline.api('POST', '/admin/v1/projects', { key: ADMIN_KEY, body: { name: 'other' } });
    const mine = [await hookline.api('POST', '/v1/portal-links', {}), await hookline.api('POST', '/v1/portal-links', { body: { readOnly: true } })].map((answer) => tokenOf(answer.body.url));
    const theirs = tokenOf((await hookline.api('POST', '/v1/portal-links', { key: other.body.apiKey })).body.url);
    for (const token of [...mine, theirs]) expect((await hookline.api('GET', '/v1/portal-session', { key: token })).status).toBe(200);

    expect(await hookline.api('DELETE', '/v1/portal-links')).toMatchObject({ status: 200, body: { revoked: 2 } });
    for (const token of mine) expect((await hookline.api('GET', '/v1/portal-session', { key: token })).status).toBe(401);
    expect((await hookline.api('GET', '/v1/portal-session', { key: theirs })).status).toBe(200);
    expect((await hookline.api('DELETE', '/v1/portal-links')).body).toEqual({ revoked: 0 });
    // The API key itself is untouched.
    expect((await hookline.api('GET', '/v1/stats/delivery-states')).status).toBe(200);
  });
});

describe('the portal page', () => {
  it('may be framed only by HOOKLINE_PORTAL_FRAME_ANCESTORS; the rest of the dashboard never', async () => {
    const closed = await startTestHookline();
    const page = await fetch(`${closed.url}/ui/portal`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app">');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');

    const open = await startTestHookline({ portalFrameAncestors: ['https://app.example.com', 'https://*.example.org'] });
    const portal = await fetch(`${open.url}/ui/portal`);
    expect(portal.headers.get('content-security-policy')).toContain('frame-ancestors https://app.example.com https://*.example.org');
    expect(portal.headers.get('x-frame-options')).toBeNull();
    const dashboard = await fetch(`${open.url}/ui/`);
    expect(dashboard.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(dashboard.headers.get('x-frame-options')).toBe('DENY');
  });
});
