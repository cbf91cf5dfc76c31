/**
 * Dashboard actions in a real browser (Debian's Chromium via playwright-core) against a real node
 * and receiver: picking the event to replay from the recent events, sending a test event from the
 * webhook page, and a redrive that would not fit under HOOKLINE_MAX_WAITING_PER_PROJECT.
 */
import { describe, expect, it } from 'vitest';
import { API_KEY, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';
import { openPage, screenshot, signIn, useChromium, waitForRows } from './browser.js';

const browser = useChromium();

describe('dashboard actions (headless Chromium)', () => {
  it('lists recent events, each once, filters them by type, and replays the one picked', { timeout: 60_000 }, async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    const { client } = hookline;
    await client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event', 'service.trigger.disabled'] });
    const first = await client.sendEvent({ id: 'evt_browse_1', type: 'service.trigger.event', data: { n: 1 } });
    await client.sendEvent({ id: 'evt_browse_2', type: 'service.trigger.disabled', data: { n: 2 } });
    await client.sendEvent({ id: 'evt_browse_3', type: 'service.trigger.event', data: { n: 3 } });
    // A replay made outside the page: the event has two deliveries and is still listed once.
    await client.replayEvent('evt_browse_2');

    const { page, problems } = await openPage(browser());
    await signIn(page, hookline.url, API_KEY);
    await page.getByRole('link', { name: 'Replay' }).click();
    const events = page.getByRole('region', { name: 'Recent events' });
    const listed = () => events.locator('tr[data-event-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-event-id')));
    await waitFor(async () => (await listed()).length === 3, { timeoutMs: 15_000, message: 'three recent events' });
    expect(await listed()).toEqual(['evt_browse_2', 'evt_browse_3', 'evt_browse_1']);

    await events.getByLabel('Event type').selectOption('service.trigger.event');
    await waitFor(async () => (await listed()).join() === 'evt_browse_3,evt_browse_1', { timeoutMs: 15_000, message: 'only service.trigger.event events' });

    // Picking an event fills the form; replaying it makes a new delivery of exactly that event.
    await events.getByRole('radio', { name: 'evt_browse_1' }).check();
    expect(await page.getByLabel('Event id').inputValue()).toBe('evt_browse_1');
    await page.getByRole('button', { name: 'Replay event' }).click();
    const replayed = page.getByRole('status').filter({ hasText: 'Replayed evt_browse_1 as a new delivery' });
    await replayed.waitFor();
    const replayId = (await replayed.locator('code').innerText()).trim();
    expect(replayId).toMatch(/^dlv_/);
    expect(replayId).not.toBe(first.deliveryId);
    const replay = await client.getDelivery(replayId);
    expect(replay.eventId).toBe('evt_browse_1');
    await waitForRows(page, 2);
    await waitFor(async () => (await listed())[0] === 'evt_browse_1', { timeoutMs: 15_000, message: 'the replayed event to lead the list' });
    expect(await events.getByRole('radio', { name: 'evt_browse_1' }).isChecked()).toBe(true);
    await screenshot(page, 'replay-browser', { readme: false, fullPage: true });
    expect(problems).toEqual([]);
  });

  it('sends a test event from the webhook page, shows its delivery and opens it', { timeout: 60_000 }, async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] });
    receiver.secret = (await hookline.client.getSecret()).secret;

    const { page, problems } = await openPage(browser());
    await signIn(page, hookline.url, API_KEY);
    await page.getByRole('link', { name: 'Webhook' }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    const sent = page.getByRole('status').filter({ hasText: 'Sent test event' });
    await sent.waitFor();
    const deliveryId = (await sent.locator('a code').innerText()).trim();
    expect(deliveryId).toMatch(/^dlv_/);

    // The receiver gets it, signed, as a service.trigger.event marked as a test.
    const arrived = await waitFor(() => receiver.received[0], { timeoutMs: 15_000, message: 'the test event to arrive' });
    expect(arrived.verified).toBe(true);
    expect(arrived.envelope).toMatchObject({ type: 'service.trigger.event', data: { test: true } });
    expect(await sent.innerText()).toContain(arrived.envelope.id);

    // Its link opens the delivery's detail, which reaches succeeded.
    await screenshot(page, 'webhook-test-event');
    await sent.getByRole('link', { name: deliveryId }).click();
    const detail = page.getByRole('region', { name: `Delivery ${deliveryId}` });
    await detail.waitFor();
    await detail.locator('.badge.status-succeeded').first().waitFor();
    expect(await detail.innerText()).toContain('service.trigger.event');
    expect(problems).toEqual([]);
  });

  it('says when the dead letters a redrive would start do not fit under HOOKLINE_MAX_WAITING_PER_PROJECT, and keeps its button off', { timeout: 60_000 }, async () => {
    const hookline = await startTestHookline({ maxWaitingPerProject: 2 });
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] });
    for (const n of [1, 2, 3]) {
      const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n } });
      await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered');
    }

    const { page, problems } = await openPage(browser());
    await signIn(page, hookline.url, API_KEY);
    await page.getByRole('link', { name: 'Dead letters' }).click();
    const preview = page.locator('p.preview[data-preview="3"]');
    await preview.waitFor();
    expect(await preview.innerText()).toContain('more than the project has room for now (HOOKLINE_MAX_WAITING_PER_PROJECT)');
    expect(await page.getByRole('button', { name: 'Redrive 3 dead letters…' }).isDisabled()).toBe(true);
    expect(problems).toEqual([]);
  });
});
