/**
 * Issue 38's per-project retry schedule on the dashboard's webhook page, in a real browser (Debian's
 * Chromium via playwright-core) against a real node and a receiver that always fails: set from the
 * form, refused by the server when malformed, shown as stored, cleared back to the node's, and acted on.
 */
import { describe, expect, it } from 'vitest';
import { API_KEY, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { openPage, signIn, useChromium } from './browser.js';

const browser = useChromium();

describe('the retry schedule on the dashboard (headless Chromium)', () => {
  it('sets a project\'s retry schedule from the form, shows the server\'s refusal of a bad one, and clears it back to the node\'s', { timeout: 60_000 }, async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    const { page, problems } = await openPage(browser());
    await signIn(page, hookline.url, API_KEY);
    await page.getByRole('link', { name: 'Webhook' }).click();
    await page.getByText('No webhook is configured yet').waitFor();

    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByLabel('Retry schedule').fill('0,-1s');
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('body.retrySchedule: invalid retry schedule "0,-1s" at entry 2').waitFor();
    expect((await hookline.api('GET', '/v1/webhook')).status).toBe(404);

    // Written loosely, stored as delays, shown in one form.
    await page.getByLabel('Retry schedule').fill(' 0, 60s ');
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Saved.').waitFor();
    expect((await hookline.client.getWebhook()).retrySchedule).toBe('0,1m');
    const current = page.getByRole('region', { name: 'Current configuration' });
    await current.getByText('0,1m').waitFor();
    await page.reload();
    await page.getByRole('link', { name: 'Webhook' }).click();
    await page.getByLabel('Retry schedule').waitFor();
    expect(await page.getByLabel('Retry schedule').inputValue()).toBe('0,1m');

    // One attempt a round: the first failure dead-letters.
    await page.getByLabel('Retry schedule').fill('0');
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Saved.').waitFor();
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    expect(await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered')).toMatchObject({ attempts: 1, maxAttempts: 1 });

    await page.getByLabel('Retry schedule').fill('');
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Saved.').waitFor();
    expect((await hookline.client.getWebhook()).retrySchedule).toBeNull();
    await current.getByText('the node\'s schedule', { exact: true }).waitFor();
    expect(problems).toEqual([]);
  });
});
