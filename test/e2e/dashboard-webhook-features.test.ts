/**
 * Issue 15's fields on the dashboard's webhook page, in a real browser (Debian's Chromium via
 * playwright-core) against a real node and receivers: custom headers, payload filter, FIFO ordering,
 * the operational URL and issue 35's delivery limits are set from the form, stored, shown, and take effect.
 */
import { describe, expect, it } from 'vitest';
import { API_KEY, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';
import { openPage, screenshot, signIn, useChromium } from './browser.js';

const browser = useChromium();

describe('webhook delivery features on the dashboard (headless Chromium)', () => {
  it('sets headers, filter, ordering, the operational URL and the delivery limits from the form; a malformed filter or header line, or a limit out of range, is refused on the page', { timeout: 60_000 }, async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    const ops = await startReceiver();
    const { page, problems } = await openPage(browser());
    await signIn(page, hookline.url, API_KEY);
    await page.getByRole('link', { name: 'Webhook' }).click();
    await page.getByText('No webhook is configured yet').waitFor();

    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByLabel('Custom headers').fill('X-Tenant acme');
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Custom headers, line 1: write it as Name: value').waitFor();
    await page.getByLabel('Custom headers').fill('X-Tenant: acme\nX-Region: eu');
    await page.getByLabel('Payload filter').fill('{"data.amount": {"$gte": 100');
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Payload filter: not valid JSON').waitFor();
    // A rule the server refuses: its answer names the bad node.
    await page.getByLabel('Payload filter').fill('{"data.amount": {"$gt": "ten"}}');
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('body.filter.data.amount.$gt').waitFor();
    // A limit above the node's HOOKLINE_ENDPOINT_CONCURRENCY: the server's answer names the range.
    await page.getByLabel('Payload filter').fill('{"data.amount": {"$gte": 100}}');
    await page.getByLabel('Max concurrency').fill('51');
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('body.maxConcurrency: must be a whole number from 1 to 50 (HOOKLINE_ENDPOINT_CONCURRENCY), got 51').waitFor();
    expect((await hookline.api('GET', '/v1/webhook')).status).toBe(404);

    await page.getByLabel('Max concurrency').fill('4');
    await page.getByLabel('Rate limit (per second)').fill('250');
    await page.getByRole('radio', { name: /^FIFO/ }).check();
    await page.getByLabel('Operational events URL').fill(ops.url);
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Saved.').waitFor();

    const config = await hookline.client.getWebhook();
    expect(config).toMatchObject({ headers: { 'X-Tenant': 'acme', 'X-Region': 'eu' }, filter: { 'data.amount': { $gte: 100 } }, ordering: 'fifo', operationalUrl: ops.url, maxConcurrency: 4, rateLimitPerSecond: 250 });
    const current = page.getByRole('region', { name: 'Current configuration' });
    await current.getByText('fifo: one at a time, in ingest order').waitFor();
    await current.getByText('4 in flight').waitFor();
    await current.getByText('250 per second').waitFor();
    await current.getByText(ops.url).waitFor();

    // The form shows what is stored after a reload, and the secrets panel shows the operational secret.
    await page.reload();
    await page.getByRole('link', { name: 'Webhook' }).click();
    await page.getByLabel('Custom headers').waitFor();
    expect(await page.getByLabel('Custom headers').inputValue()).toBe('X-Tenant: acme\nX-Region: eu');
    expect(JSON.parse(await page.getByLabel('Payload filter').inputValue())).toEqual({ 'data.amount': { $gte: 100 } });
    expect(await page.getByRole('radio', { name: /^FIFO/ }).isChecked()).toBe(true);
    expect([await page.getByLabel('Max concurrency').inputValue(), await page.getByLabel('Rate limit (per second)').inputValue()]).toEqual(['4', '250']);
    await page.getByRole('button', { name: 'Show secret' }).click();
    const { operationalSecret } = await hookline.client.getSecret();
    await page.getByText(operationalSecret!).waitFor();

    receiver.secret = (await hookline.client.getSecret()).secret;
    expect((await hookline.client.sendEvent({ type: 'service.trigger.event', data: { amount: 1 } })).deliveryId).toBeNull();
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { amount: 150 } });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    expect(receiver.received[0]!.headers).toMatchObject({ 'x-tenant': 'acme', 'x-region': 'eu' });
    await screenshot(page, 'webhook-features', { readme: false, fullPage: true });
    expect(problems).toEqual([]);
  });

  it("shows the endpoint's circuit breaker: closed, then open with since when and the next probe", { timeout: 60_000 }, async () => {
    const hookline = await startTestHookline({ circuitFailures: 2, circuitProbeIntervalMs: 60_000 });
    const receiver = await startReceiver({ respond: () => ({ status: 503 }) });
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] });
    const { page, problems } = await openPage(browser());
    await signIn(page, hookline.url, API_KEY);
    await page.getByRole('link', { name: 'Webhook' }).click();
    const current = page.getByRole('region', { name: 'Current configuration' });
    await current.locator('.circuit-closed').waitFor();

    // One delivery, whose attempts (the helpers' 0, 50 and 100 ms) run one after another: two events'
    // attempts overlapped on a loaded machine, and a third failure in flight was counted ("after 3").
    await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
    const open = await waitFor(async () => {
      const { circuit } = await hookline.client.getWebhook();
      return circuit.state === 'open' ? circuit : null;
    }, { message: 'the circuit open' });
    await page.reload();
    await page.getByRole('link', { name: 'Webhook' }).click();
    await current.locator('.circuit-open').waitFor();
    const text = await current.locator('.circuit-detail').textContent();
    expect(text).toContain('after 2 failures in a row');
    expect(text).toMatch(/since .+next probe at /);
    expect(open.nextProbeAt).not.toBeNull();
    expect(problems).toEqual([]);
  });
});
