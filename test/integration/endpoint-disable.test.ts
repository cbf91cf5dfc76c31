import { describe, expect, it } from 'vitest';
import { ManualClock } from '../helpers/manual-clock.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';
import { startHookline } from '../../src/app.js';
import { defaultSettings } from '../../src/config/settings.js';
import { HooklineClient } from '../../src/sdk/index.js';

const HOUR = 3600_000;

describe('endpoint auto-disable', () => {
  it('disables an endpoint whose every attempt failed for disableAfter, holds its events, and delivers them when re-activated', async () => {
    const clock = new ManualClock();
    let healthy = false;
    const receiver = await startReceiver({ respond: () => ({ status: healthy ? 204 : 500 }) });
    const dir = makeTempDir();
    const node = await startHookline(
      defaultSettings({ dataDir: dir.path, port: 0, apiKey: 'k', allowPrivateNetworks: true, retrySchedule: [0, HOUR, HOUR, HOUR], retryJitter: false, disableAfterMs: 2 * HOUR, logLevel: 'silent' }),
      { clock },
    );
    try {
      const client = new HooklineClient({ baseUrl: node.url, apiKey: 'k' });
      await client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] });
      receiver.secret = (await client.getSecret()).secret;

      const first = await client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
      await waitFor(() => receiver.received.length >= 1, { timeoutMs: 5_000, message: 'first failed attempt' });
      await waitFor(async () => (await client.getDelivery(first.deliveryId!)).status === 'retrying', { timeoutMs: 5_000, message: 'retrying' });
      expect((await client.getWebhook()).status).toBe('active');

      // Failing for one hour is not yet enough.
      clock.advance(HOUR);
      await waitFor(() => receiver.received.length >= 2, { timeoutMs: 5_000, message: 'second failed attempt' });
      await waitFor(async () => (await client.getDelivery(first.deliveryId!)).attempts === 2, { timeoutMs: 5_000, message: 'second attempt recorded' });
      expect((await client.getWebhook()).status).toBe('active');

      // Two hours of nothing but failures: the endpoint goes disabled.
      clock.advance(HOUR);
      await waitFor(async () => (await client.getWebhook()).status === 'disabled', { timeoutMs: 5_000, message: 'webhook disabled' });

      // Events keep being accepted and held, not attempted.
      const held = await client.sendEvent({ type: 'service.trigger.event', data: { n: 2 } });
      expect(held.deliveryId).not.toBeNull();
      const attemptsSoFar = receiver.received.length;
      clock.advance(3 * HOUR);
      expect((await client.getDelivery(held.deliveryId!)).status).toBe('pending');
      expect(receiver.received.length).toBe(attemptsSoFar);

      // Re-activating delivers what was held.
      healthy = true;
      await client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] });
      await waitFor(async () => (await client.getDelivery(held.deliveryId!)).status === 'succeeded', { timeoutMs: 5_000, message: 'held delivery succeeded' });
      await waitFor(async () => (await client.getDelivery(first.deliveryId!)).status === 'succeeded', { timeoutMs: 5_000, message: 'retrying delivery succeeded' });
    } finally {
      await node.close();
      dir.remove();
    }
  });
});
