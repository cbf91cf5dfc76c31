/**
 * Issue 38's `sendTraceparent` on the dashboard's webhook page, in a real browser (Debian's
 * Chromium via playwright-core) against a real node: set from the form, shown as stored, cleared.
 */
import { describe, expect, it } from 'vitest';
import { API_KEY, startTestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { openPage, signIn, useChromium } from './browser.js';

const browser = useChromium();

describe('sendTraceparent on the dashboard (headless Chromium)', () => {
  it('sets and clears it from the form, and shows it as stored', { timeout: 60_000 }, async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    const { page, problems } = await openPage(browser());
    await signIn(page, hookline.url, API_KEY);
    await page.getByRole('link', { name: 'Webhook' }).click();
    await page.getByText('No webhook is configured yet').waitFor();

    await page.getByLabel('Endpoint URL').fill(receiver.url);
    await page.getByLabel('Send traceparent').check();
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Saved.').waitFor();
    expect((await hookline.client.getWebhook()).sendTraceparent).toBe(true);
    const current = page.getByRole('region', { name: 'Current configuration' });
    await current.getByText('each attempt carries its').waitFor();
    await page.reload();
    await page.getByRole('link', { name: 'Webhook' }).click();
    await page.getByLabel('Send traceparent').waitFor();
    expect(await page.getByLabel('Send traceparent').isChecked()).toBe(true);

    await page.getByLabel('Send traceparent').uncheck();
    await page.getByRole('button', { name: 'Save webhook' }).click();
    await page.getByText('Saved.').waitFor();
    expect((await hookline.client.getWebhook()).sendTraceparent).toBe(false);
    expect(problems).toEqual([]);
  });
});
