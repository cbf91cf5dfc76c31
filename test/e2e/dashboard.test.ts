/**
 * The dashboard in a real browser (Debian's Chromium driven by playwright-core) against a whole
 * node started in-process, with a real receiver that fails until the test lets it succeed.
 * Screenshots of every page go to test-artifacts/dashboard/ (and, with
 * HOOKLINE_UPDATE_SCREENSHOTS=1, to docs/screenshots/ for the README).
 */
import { pino } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startHookline } from '../../src/app.js';
import type { Hookline } from '../../src/app.js';
import { defaultSettings } from '../../src/config/settings.js';
import { HooklineClient } from '../../src/sdk/index.js';
import type { EventType } from '../../src/sdk/index.js';
import { ADMIN_KEY, API_KEY } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';
import { NARROW, WIDE, launchChromium, openPage, screenshot, signIn, useChromium, waitForRows, waitForStateCount } from './browser.js';

const browser = useChromium();

/** A node as the brief's tests run it (3 attempts at 0, 50, 100 ms), logging at info into `logLines`. */
async function startNode(): Promise<{ node: Hookline; logLines: string[] }> {
  const dir = makeTempDir('hookline-e2e-');
  const logLines: string[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logLines.push(line) });
  // The breaker off: the page's flows are the point here, and 15 failures in a row would open it (its own e2e test is in dashboard-webhook-features).
  const settings = defaultSettings({ dataDir: dir.path, port: 0, apiKey: API_KEY, adminKey: ADMIN_KEY, allowPrivateNetworks: true, retrySchedule: [0, 50, 100], retryJitter: false, logLevel: 'info', circuitFailures: 0 });
  const node = await startHookline(settings, { logger });
  onTestFinished(async () => {
    await node.close();
    dir.remove();
  });
  return { node, logLines };
}

describe('dashboard (headless Chromium)', () => {
  it('signs in, configures the webhook, watches failures reach dead letters, recovers them from the page and sees the diagram counts move', { timeout: 120_000 }, async () => {
    const { node, logLines } = await startNode();
    let receiverUp = false;
    const receiver = await startReceiver({ respond: () => (receiverUp ? { status: 204 } : { status: 500, body: '{"error":"receiver is down for maintenance"}' }) });
    const { page, problems, urls } = await openPage(browser());

    // Sign in: a wrong key is refused with a clear message; the right one, typed and submitted by keyboard, opens the dashboard.
    await page.goto(`${node.url}/`);
    expect(new URL(page.url()).pathname).toBe('/ui/');
    await page.getByLabel('Project API key').fill('not-the-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const refusal = page.getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.innerText()).toMatch(/API key was not accepted \(401 unauthorized\)/);
    await screenshot(page, 'login-error');
    await page.getByLabel('Project API key').fill('');
    await page.getByLabel('Project API key').focus();
    await page.keyboard.type(API_KEY);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Delivery states' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('hookline.apiKey'))).toBe(API_KEY);

    // Configure the webhook from the page, then rotate the secret through its confirmation.
    await page.getByRole('link', { name: 'Webhook' }).click();
    await page.getByText('No webhook is configured yet').waitFor();
    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Saved. New events are delivered').waitFor();
    const client = new HooklineClient({ baseUrl: node.url, apiKey: API_KEY });
    expect(await client.getWebhook()).toMatchObject({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event', 'service.connected_account.expired', 'service.trigger.disabled'] });
    const firstSecret = (await client.getSecret()).secret;
    await page.getByLabel('Grace period (seconds)').fill('3600');
    await page.getByRole('button', { name: 'Rotate secret…' }).click();
    const rotateDialog = page.getByRole('dialog', { name: 'Rotate the signing secret?' });
    await rotateDialog.waitFor();
    await rotateDialog.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByText('Rotated. The previous secret keeps signing until').waitFor();
    const rotatedSecret = (await client.getSecret()).secret;
    expect(rotatedSecret).not.toBe(firstSecret);
    expect(await page.locator('code.secret').innerText()).toBe(rotatedSecret);
    receiver.secret = rotatedSecret;
    await screenshot(page, 'webhook', { fullPage: true });

    // Five events to a receiver that answers 500: three attempts each, then dead letters.
    const types: EventType[] = ['service.trigger.event', 'service.trigger.event', 'service.trigger.event', 'service.trigger.event', 'service.trigger.disabled'];
    const sent = [];
    for (const [index, type] of types.entries()) sent.push(await client.sendEvent({ id: `evt_dash_${index + 1}`, type, data: { order: index + 1 } }));
    const deliveryIds = sent.map((answer) => answer.deliveryId!);

    await page.getByRole('link', { name: 'States' }).click();
    await waitForStateCount(page, 'dead_lettered', 5);
    await waitForStateCount(page, 'succeeded', 0);
    await screenshot(page, 'states-dead-letters', { readme: false });

    // The log, filtered by status, and one delivery's attempts and transitions.
    await page.getByRole('link', { name: 'Delivery log' }).click();
    await waitForRows(page, 5);
    await page.getByLabel('Status').selectOption('dead_lettered');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    expect((await waitForRows(page, 5)).sort()).toEqual([...deliveryIds].sort());
    await page.getByRole('link', { name: deliveryIds[0]! }).click();
    const detail = page.getByRole('region', { name: `Delivery ${deliveryIds[0]}` });
    await detail.locator('ol.attempts > li').nth(2).waitFor();
    expect(await detail.locator('ol.attempts > li').count()).toBe(3);
    expect(await detail.locator('ol.attempts').innerText()).toContain('HTTP 500');
    expect(await detail.locator('ol.attempts').innerText()).toContain('receiver is down for maintenance');
    const timeline = await detail.locator('ol.timeline li').allInnerTexts();
    expect(timeline.length).toBeGreaterThanOrEqual(9);
    expect(timeline.at(-1)).toMatch(/failed\s*→?\s*(to\s*)?dead lettered/);
    await screenshot(page, 'delivery-log', { fullPage: true });

    // The receiver recovers. Retry one, select and retry two, redrive the rest by filter.
    receiverUp = true;
    await page.getByRole('link', { name: 'Dead letters' }).click();
    await waitForRows(page, 5);
    await page.getByRole('button', { name: `Retry ${deliveryIds[0]}` }).click();
    await page.getByText('Retried 1 delivery').waitFor();
    await waitForRows(page, 4);
    await page.getByLabel(`Select ${deliveryIds[1]}`).check();
    await page.getByLabel(`Select ${deliveryIds[2]}`).check();
    await page.getByRole('button', { name: 'Retry selected (2)' }).click();
    await page.getByText('Retried 2 deliveries').waitFor();
    await waitForRows(page, 2);

    await page.locator('#r-type').selectOption('service.trigger.event');
    await page.locator('p.preview[data-preview="1"]').waitFor();
    await page.locator('#r-type').selectOption('');
    await page.locator('p.preview[data-preview="2"]').waitFor();
    expect(await page.locator('p.preview').innerText()).toBe('2 dead letters match this filter.');
    await page.getByRole('button', { name: 'Redrive 2 dead letters…' }).click();
    const redriveDialog = page.getByRole('dialog', { name: 'Redrive 2 dead letters?' });
    await redriveDialog.waitFor();
    await screenshot(page, 'dead-letters-redrive', { fullPage: true });
    await redriveDialog.getByRole('button', { name: 'Redrive 2' }).click();
    await page.getByText('Redrove 2 dead letters').waitFor();
    await waitForRows(page, 0);

    // Every delivery succeeds, and the diagram's counts move there by themselves.
    await page.getByRole('link', { name: 'States' }).click();
    await waitForStateCount(page, 'succeeded', 5);
    await waitForStateCount(page, 'dead_lettered', 0);
    for (const id of deliveryIds) expect((await client.getDelivery(id)).status).toBe('succeeded');
    expect(receiver.received.filter((delivery) => delivery.verified).length).toBeGreaterThanOrEqual(5);
    await screenshot(page, 'states');

    // Replay an event picked from the recent events: a new delivery of it, linked from the result, listed with the first.
    await page.getByRole('link', { name: 'Replay' }).click();
    await page.getByRole('region', { name: 'Recent events' }).getByRole('radio', { name: sent[0]!.id }).check();
    await page.getByRole('button', { name: 'Replay event' }).click();
    const replayed = page.getByRole('status').filter({ hasText: 'Replayed evt_dash_1 as a new delivery' });
    await replayed.waitFor();
    const replayId = (await replayed.locator('code').innerText()).trim();
    expect(replayId).toMatch(/^dlv_/);
    expect(replayId).not.toBe(deliveryIds[0]);
    await waitForRows(page, 2);
    await waitFor(async () => (await client.getDelivery(replayId)).status === 'succeeded', { message: 'the replay to succeed' });
    await page.getByRole('region', { name: `Deliveries of ${sent[0]!.id}` }).getByRole('button', { name: 'Refresh' }).click();
    await page.locator(`tr[data-delivery-id="${replayId}"][data-status="succeeded"]`).waitFor();
    await screenshot(page, 'replay');

    // Narrow screen: nothing scrolls sideways; the log's rows become labelled cards.
    await page.setViewportSize(NARROW);
    await page.getByRole('link', { name: 'Delivery log' }).click();
    await waitForRows(page, 6);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(NARROW.width);
    await screenshot(page, 'narrow-delivery-log', { fullPage: true });
    await page.getByRole('link', { name: 'States' }).click();
    await waitForStateCount(page, 'succeeded', 6);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(NARROW.width);
    await screenshot(page, 'narrow-states');

    // Keyboard: after a reload (the key survives it), the skip link is the first stop and moves focus to the content.
    await page.setViewportSize(WIDE);
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Delivery states' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');

    // The key was sent only as a bearer token: never in an address, never in the node's log.
    expect(urls.filter((url) => url.includes(API_KEY))).toEqual([]);
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.filter((line) => line.includes(API_KEY))).toEqual([]);
    expect(problems).toEqual([]);

    // Signing out forgets the key.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Project API key').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('hookline.apiKey'))).toBeNull();
  });

  it("never shows another project's data, and reads the log without JavaScript", { timeout: 90_000 }, async () => {
    const { node, logLines } = await startNode();
    const receiver = await startReceiver();
    const created = await fetch(`${node.url}/admin/v1/projects`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'other' }) });
    const other = (await created.json()) as { projectId: string; apiKey: string };
    const clientA = new HooklineClient({ baseUrl: node.url, apiKey: API_KEY });
    const clientB = new HooklineClient({ baseUrl: node.url, apiKey: other.apiKey });
    for (const client of [clientA, clientB]) await client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] });
    const a = await clientA.sendEvent({ id: 'evt_project_a', type: 'service.trigger.event', data: { project: 'a' } });
    const a2 = await clientA.sendEvent({ id: 'evt_project_a2', type: 'service.trigger.event', data: { project: 'a' } });
    const b = await clientB.sendEvent({ id: 'evt_project_b', type: 'service.trigger.event', data: { project: 'b' } });
    for (const [client, answer] of [[clientA, a], [clientA, a2], [clientB, b]] as const) {
      await waitFor(async () => (await client.getDelivery(answer.deliveryId!)).status === 'succeeded', { message: `${answer.deliveryId} to succeed` });
    }

    // Signed in as the other project: its one delivery, its counts, and none of project A's.
    const { page, problems } = await openPage(browser());
    await signIn(page, node.url, other.apiKey);
    await waitForStateCount(page, 'succeeded', 1);
    await page.getByRole('link', { name: 'Delivery log' }).click();
    expect(await waitForRows(page, 1)).toEqual([b.deliveryId]);
    expect(await page.locator('main').innerText()).not.toContain('evt_project_a');
    await page.goto(`${node.url}/ui/#/deliveries/${a.deliveryId}`);
    await page.getByText(`There is no delivery ${a.deliveryId} in this project.`).waitFor();
    await page.getByRole('link', { name: 'Replay' }).click();
    // The delivery log has an 'Event id' filter too: fill only once the replay page is shown.
    await page.getByRole('heading', { name: 'Replay an event' }).waitFor();
    await page.getByLabel('Event id').fill('evt_project_a');
    await page.getByRole('button', { name: 'Replay event' }).click();
    await page.getByRole('alert').filter({ hasText: 'event_not_found' }).waitFor();
    expect(problems).toEqual([]);

    // Without JavaScript: the page says what needs it and offers the log, read on the server.
    const scriptless = await launchChromium({ javaScript: false });
    onTestFinished(() => scriptless.close());
    const noJs = await openPage(scriptless);
    await noJs.page.goto(`${node.url}/`);
    // Playwright's text and role locators skip <noscript>: CSS selectors reach into it.
    expect(await noJs.page.locator('body').innerText()).toContain('The dashboard needs JavaScript');
    await noJs.page.locator('noscript #nojs-key').fill('wrong-key');
    await noJs.page.locator('noscript button[type="submit"]').click();
    expect(await noJs.page.getByRole('alert').innerText()).toContain('That API key was not accepted');
    await noJs.page.getByLabel('API key').fill(API_KEY);
    await noJs.page.getByLabel('Per page').fill('1');
    await noJs.page.getByRole('button', { name: 'Show deliveries' }).click();
    await noJs.page.locator(`tbody tr[data-delivery-id="${a2.deliveryId}"]`).waitFor();
    expect(await noJs.page.locator('tbody tr').count()).toBe(1);
    expect(noJs.page.url()).toBe(`${node.url}/ui/log`);
    await noJs.page.getByRole('button', { name: 'Older deliveries' }).click();
    await noJs.page.locator(`tbody tr[data-delivery-id="${a.deliveryId}"]`).waitFor();
    expect(await noJs.page.locator('tbody tr').count()).toBe(1);
    expect(await noJs.page.getByRole('button', { name: 'Older deliveries' }).count()).toBe(0);
    await noJs.page.getByLabel('Per page').fill('50');
    await noJs.page.getByRole('button', { name: 'Show deliveries' }).click();
    await noJs.page.locator('tbody tr').nth(1).waitFor();
    expect(await noJs.page.locator('main').innerText()).not.toContain(b.deliveryId!);
    await noJs.page.waitForLoadState('load');
    await screenshot(noJs.page, 'no-javascript-log');
    expect(noJs.urls.filter((url) => url.includes(API_KEY) || url.includes(other.apiKey))).toEqual([]);
    expect(logLines.filter((line) => line.includes(API_KEY) || line.includes(other.apiKey))).toEqual([]);
  });
});
