import { describe, expect, it } from 'vitest';
import { ADMIN_KEY, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { ensureUiBuilt } from '../e2e/browser.js';

/** What the dashboard needs from the server: state counts, the redrive dry run, and its own routes. */

describe('GET /v1/stats/delivery-states', () => {
  it("counts the caller's deliveries in each status, never another project's", async () => {
    const hookline = await startTestHookline({ adminKey: ADMIN_KEY });
    const receiver = await startReceiver({ respond: (delivery) => ({ status: delivery.envelope.type === 'service.trigger.event' ? 204 : 500 }) });
    await configureReceiver(hookline, receiver);
    const empty = await hookline.api('GET', '/v1/stats/delivery-states');
    expect(empty).toMatchObject({ status: 200, body: { counts: { pending: 0, delivering: 0, succeeded: 0, retrying: 0, dead_lettered: 0 } } });

    const ok = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const bad = await hookline.client.sendEvent({ type: 'service.trigger.disabled', data: {} });
    await waitForDeliveryStatus(hookline.client, ok.deliveryId!, 'succeeded');
    await waitForDeliveryStatus(hookline.client, bad.deliveryId!, 'dead_lettered');
    expect((await hookline.api('GET', '/v1/stats/delivery-states')).body).toEqual({ counts: { pending: 0, delivering: 0, succeeded: 1, retrying: 0, dead_lettered: 1 } });

    const other = await hookline.api('POST', '/admin/v1/projects', { key: ADMIN_KEY, body: { name: 'other' } });
    expect((await hookline.api('GET', '/v1/stats/delivery-states', { key: other.body.apiKey })).body.counts).toEqual({ pending: 0, delivering: 0, succeeded: 0, retrying: 0, dead_lettered: 0 });
    expect((await hookline.api('GET', '/v1/stats/delivery-states', { key: null })).status).toBe(401);
  });
});

describe('POST /v1/logs/webhook-deliveries/redrive with dryRun', () => {
  it('answers how many a redrive would start, by the same filter, and changes nothing', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    await configureReceiver(hookline, receiver);
    const first = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const second = await hookline.client.sendEvent({ type: 'service.trigger.disabled', data: {} });
    for (const answer of [first, second]) await waitForDeliveryStatus(hookline.client, answer.deliveryId!, 'dead_lettered');
    const requestsBefore = receiver.received.length;

    const all = await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { dryRun: true } });
    expect(all).toMatchObject({ status: 200, body: { redriven: 0, wouldRedrive: 2 } });
    const byType = await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { dryRun: true, eventType: 'service.trigger.disabled' } });
    expect(byType.body).toEqual({ redriven: 0, wouldRedrive: 1, fits: true });
    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { dryRun: true, since: future } })).body).toEqual({ redriven: 0, wouldRedrive: 0, fits: true });
    expect((await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { dryRun: true, until: future } })).body).toEqual({ redriven: 0, wouldRedrive: 2, fits: true });
    expect((await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { dryRun: 'yes' } })).status).toBe(400);

    expect((await hookline.client.getDelivery(first.deliveryId!)).status).toBe('dead_lettered');
    expect(receiver.received.length).toBe(requestsBefore);
    expect((await hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body: { dryRun: false } })).body).toEqual({ redriven: 2 });
  });

  it('takes a delivery the log already shows dead-lettered while that step is still being stored', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    await configureReceiver(hookline, receiver);
    // The real store, with the commit of a dead-lettering step held back until the test lets it go.
    const store = hookline.node.engine.store;
    const applyDeliveryChanges = store.applyDeliveryChanges.bind(store);
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    let holding: string | undefined;
    store.applyDeliveryChanges = async (...args) => {
      if (args[3].some((change) => change.status === 'dead_lettered')) {
        holding = args[0];
        await held;
      }
      return applyDeliveryChanges(...args);
    };
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered');
    expect(holding).toBeDefined();
    expect(store.getDeliveryHead(holding!, sent.deliveryId!)?.status).not.toBe('dead_lettered');

    const redrive = (body: object) => hookline.api('POST', '/v1/logs/webhook-deliveries/redrive', { body });
    expect((await redrive({ dryRun: true })).body).toEqual({ redriven: 0, wouldRedrive: 1, fits: true });
    expect((await redrive({ dryRun: true, eventType: 'service.trigger.disabled' })).body).toEqual({ redriven: 0, wouldRedrive: 0, fits: true });
    const redriven = redrive({ dryRun: false });
    letGo();
    expect((await redriven).body).toEqual({ redriven: 1 });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered');
    expect((await hookline.client.getDelivery(sent.deliveryId!)).transitions.map((t) => t.event)).toContain('REDRIVE');
  });
});

describe('dashboard routes', () => {
  it('serves the dashboard at /ui/ with a strict CSP, the diagram as SVG, and the no-JavaScript log', async () => {
    ensureUiBuilt();
    const hookline = await startTestHookline();
    const root = await fetch(`${hookline.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/ui/');

    const index = await fetch(`${hookline.url}/ui/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toMatch(/^text\/html/);
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await index.text()).toContain('<noscript>');
    expect((await fetch(`${hookline.url}/ui/app.js`)).status).toBe(200);
    expect((await fetch(`${hookline.url}/ui/missing.js`)).status).toBe(404);

    const svg = await fetch(`${hookline.url}/ui/diagrams/delivery.svg`);
    expect(svg.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    const drawing = await svg.text();
    for (const state of ['pending', 'delivering', 'succeeded', 'failed', 'retrying', 'dead_lettered']) expect(drawing).toContain(`data-state="${state}"`);

    const form = (fields: Record<string, string>) => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields).toString() });
    const refused = await fetch(`${hookline.url}/ui/log`, form({ apiKey: 'wrong' }));
    expect(refused.status).toBe(401);
    expect(refused.headers.get('cache-control')).toBe('no-store');
    const refusedPage = await refused.text();
    expect(refusedPage).toContain('That API key was not accepted');
    expect(refusedPage).not.toContain('value="wrong"');

    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ['service.trigger.event'] });
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { title: '<script>alert(1)</script>' } });
    const page = await (await fetch(`${hookline.url}/ui/log`, form({ apiKey: 'test-key', status: 'pending' }))).text();
    expect(page).toContain(`data-delivery-id="${sent.deliveryId}"`);
    const badFilter = await fetch(`${hookline.url}/ui/log`, form({ apiKey: 'test-key', limit: '999' }));
    expect(badFilter.status).toBe(400);
    expect(await badFilter.text()).toContain('Check the filters');

    // The url-encoded parser is the dashboard's alone: the API stays JSON-only.
    const api = await fetch(`${hookline.url}/v1/events`, { ...form({ type: 'service.trigger.event' }), headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Bearer test-key' } });
    expect(api.status).toBe(415);
  });
});
