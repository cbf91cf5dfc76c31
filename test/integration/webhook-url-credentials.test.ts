import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ALL_TYPES, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/** Credentials in `callbackUrl` / `operationalUrl` go out as HTTP Basic authentication, as Svix and Convoy send them. */

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** A receiver that refuses (401) every request without the basic credentials `user` / `password`. */
const startBasicAuthReceiver = (user: string, password: string, respond: () => number = () => 204): Promise<Receiver> =>
  startReceiver({ respond: (delivery) => ({ status: delivery.headers.authorization === basic(user, password) ? respond() : 401 }) });

const withUserinfo = (url: string, userinfo: string) => url.replace('http://', `http://${userinfo}@`);

describe('credentials in the callback URL', () => {
  it('are sent as basic auth, percent-decoded, to a receiver that requires it, and never in the request line', async () => {
    const hookline = await startTestHookline();
    const receiver = await startBasicAuthReceiver('bob', 'p@ss:wörd');
    const callbackUrl = withUserinfo(receiver.url, 'bob:p%40ss%3Aw%C3%B6rd');
    await hookline.client.configureWebhook({ callbackUrl, status: 'active', eventTypes: ALL_TYPES });
    // The operator's own configuration shows the URL as set, as it shows the custom headers.
    expect((await hookline.client.getWebhook()).callbackUrl).toBe(callbackUrl);

    for (const n of [1, 2]) {
      const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n } });
      expect((await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded')).attempts).toBe(1);
    }
    expect(receiver.received.map((delivery) => delivery.url)).toEqual(['/hooks', '/hooks']);
  });

  it('of the operational URL are sent too; the endpoint disabled report and its log line show the callback URL with the password masked', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const hookline = await startTestHookline({}, { logger });
    const main = await startBasicAuthReceiver('bob', 's3cret', () => 410);
    const ops = await startBasicAuthReceiver('ops', 'op@ss');
    const callbackUrl = withUserinfo(main.url, 'bob:s3cret');
    await hookline.client.configureWebhook({ callbackUrl, status: 'active', eventTypes: ALL_TYPES, operationalUrl: withUserinfo(ops.url, 'ops:op%40ss') });
    await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });

    await waitFor(() => ops.received.length === 1, { message: 'the disabled report, accepted by the operational receiver' });
    const masked = withUserinfo(main.url, 'bob:***');
    expect(ops.received[0]!.envelope).toMatchObject({ type: 'hookline.endpoint.disabled', data: { callbackUrl: masked, reason: 'the endpoint answered 410 Gone' } });
    expect(ops.received[0]!.headers.authorization).toBe(basic('ops', 'op@ss'));
    expect(ops.received[0]!.url).toBe('/hooks');
    const disabled = lines.map((line) => JSON.parse(line) as Record<string, unknown>).find((entry) => String(entry.msg).startsWith('webhook endpoint disabled'));
    expect(disabled).toMatchObject({ callbackUrl: masked });
    expect(lines.join('\n')).not.toContain('s3cret');
  });
});
