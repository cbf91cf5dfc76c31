/**
 * Portal links in a real browser (Debian's Chromium via playwright-core) against a real node: the
 * link opens the dashboard without the API key and says when the session ends, a read-only one
 * cannot write, a short one ends by itself, a revoked one ends at its next call, and only the
 * origins of HOOKLINE_PORTAL_FRAME_ANCESTORS may embed it.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startTestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { openPage, screenshot, useChromium } from './browser.js';

const browser = useChromium();

/** A site on its own origin whose page `/?src=<url>` embeds that url in an iframe. */
async function embeddingSite(): Promise<string> {
  const server = createServer((request, response) => {
    const src = new URL(request.url ?? '/', 'http://host').searchParams.get('src') ?? 'about:blank';
    response.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>Host</title><iframe id="portal" src="${src.replace(/"/g, '&quot;')}" width="1000" height="700"></iframe>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('portal links (headless Chromium)', () => {
  it('a read-only link opens the dashboard without the key, shows when it ends, and cannot write', { timeout: 60_000 }, async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] });
    const link = await hookline.client.createPortalLink({ readOnly: true, expiresIn: '1h' });
    const token = new URL(link.url).hash.slice('#portal='.length);

    const { page, problems, urls } = await openPage(browser());
    await page.goto(link.url);
    await page.getByRole('heading', { level: 1, name: 'Delivery states' }).waitFor();
    // The token left the address at once, and no request carried it in its URL.
    expect(page.url()).toBe(`${hookline.url}/ui/portal#/overview`);
    const ends = page.getByTestId('session-end');
    await ends.waitFor();
    expect(await ends.innerText()).toMatch(/^Read-only · Session ends /);
    expect(await ends.locator('time').getAttribute('datetime')).toBe(link.expiresAt);

    await page.getByRole('link', { name: 'Webhook' }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    const refused = page.getByRole('alert').filter({ hasText: 'read-only' });
    await refused.waitFor();
    expect(await refused.innerText()).toContain('HTTP 403');
    await screenshot(page, 'portal-read-only', { readme: false });
    expect((await hookline.client.listDeliveriesPage()).data).toEqual([]);
    expect(urls.filter((url) => url.includes(token))).toEqual([]);
    expect(problems).toEqual([]);
  });

  it('the session ends by itself when the link expires, and at its next call when revoked', { timeout: 60_000 }, async () => {
    const hookline = await startTestHookline();
    const link = await hookline.client.createPortalLink({ expiresIn: '1h' });
    const { page } = await openPage(browser());
    // The page's clock, moved by the test: the hour passes at once, and however slow the machine
    // is, the link is live (on the server's clock) while the page loads. The server's own expiry is
    // api-portal-links.test.ts's 1s link.
    await page.clock.install();
    await page.goto(link.url);
    await page.getByTestId('session-end').waitFor();
    expect(await page.getByTestId('session-end').innerText()).toMatch(/^Session ends /);
    await page.clock.fastForward(Date.parse(link.expiresAt) - (await page.evaluate(() => Date.now())) + 1000);
    await page.getByText(/This portal session ended at/).waitFor();
    await page.getByLabel('Project API key').waitFor();

    const revoked = await hookline.client.createPortalLink();
    const second = await openPage(browser());
    await second.page.goto(revoked.url);
    await second.page.getByRole('heading', { level: 1, name: 'Delivery states' }).waitFor();
    expect(await hookline.client.revokePortalLinks()).toEqual({ revoked: 2 });
    await second.page.getByRole('link', { name: 'Delivery log' }).click();
    await second.page.getByText(/This portal link has expired or was revoked/).waitFor();
    await second.page.getByLabel('Project API key').waitFor();
  });

  it('only an origin of HOOKLINE_PORTAL_FRAME_ANCESTORS may embed it', { timeout: 60_000 }, async () => {
    const [allowed, elsewhere] = [await embeddingSite(), await embeddingSite()];
    const hookline = await startTestHookline({ portalFrameAncestors: [allowed] });
    const link = await hookline.client.createPortalLink({ readOnly: true });

    const { page } = await openPage(browser());
    await page.goto(`${allowed}/?src=${encodeURIComponent(link.url)}`);
    const framed = page.frameLocator('#portal');
    await framed.getByRole('heading', { level: 1, name: 'Delivery states' }).waitFor();
    expect(await framed.getByTestId('session-end').innerText()).toMatch(/^Read-only · Session ends /);

    // Another origin's frame is refused by the browser: the dashboard never renders in it.
    const other = await openPage(browser());
    const blocked = new Promise<string>((resolve) => other.page.on('console', (message) => /frame-ancestors/.test(message.text()) && resolve(message.text())));
    await other.page.goto(`${elsewhere}/?src=${encodeURIComponent(link.url)}`);
    expect(await blocked).toContain('frame-ancestors');
    expect(await other.page.frameLocator('#portal').getByRole('heading', { level: 1 }).count()).toBe(0);
  });
});
