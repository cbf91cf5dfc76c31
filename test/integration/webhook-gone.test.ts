import { describe, expect, it } from 'vitest';
import { configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { testDataDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/** Issue 15: an endpoint answering 410 Gone is disabled at once; its deliveries are held, not dead-lettered. */

describe('410 Gone', () => {
  it('disables the endpoint at once with the reason, holds the delivery that got it and the later ones, and resumes them on re-activation after a restart', async () => {
    const dataDir = testDataDir();
    let gone = true;
    const receiver = await startReceiver({ respond: () => ({ status: gone ? 410 : 204 }) });
    // One attempt per round: without the 410 rule the first failure would dead-letter at once.
    const first = await startTestHookline({ dataDir, retrySchedule: [0] });
    await configureReceiver(first, receiver, { eventTypes: ['service.trigger.event'] });

    const hit = await first.client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
    await waitFor(async () => (await first.client.getWebhook()).status === 'disabled', { message: 'the endpoint disabled' });
    expect(await first.client.getWebhook()).toMatchObject({ status: 'disabled', disabledReason: 'the endpoint answered 410 Gone' });
    const held = await waitForDeliveryStatus(first.client, hit.deliveryId!, 'pending');
    expect(held).toMatchObject({ attempts: 1, lastAttempt: { statusCode: 410 } });
    expect(held.transitions.map((step) => `${step.from}>${step.to}:${step.event}`)).toContain('delivering>pending:ATTEMPT_GONE');
    const later = await first.client.sendEvent({ type: 'service.trigger.event', data: { n: 2 } });
    expect((await first.client.getDelivery(later.deliveryId!)).status).toBe('pending');
    expect(receiver.received).toHaveLength(1);
    await first.close();

    const second = await startTestHookline({ dataDir, retrySchedule: [0] });
    expect((await second.client.getWebhook()).status).toBe('disabled');
    expect(receiver.received).toHaveLength(1);
    gone = false;
    const reactivated = await second.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ['service.trigger.event'] });
    expect(reactivated).toMatchObject({ status: 'active', disabledReason: null });
    const resumed = await waitForDeliveryStatus(second.client, hit.deliveryId!, 'succeeded');
    expect(resumed.attempts).toBe(2);
    await waitForDeliveryStatus(second.client, later.deliveryId!, 'succeeded');
    const { counts } = await second.client.getStats();
    expect(counts.dead_lettered).toBe(0);
  });

  it('any other 4xx is an ordinary failure: retried, and the endpoint stays active', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: (_delivery, index) => ({ status: index === 0 ? 404 : 204 }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const detail = await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    expect(detail.attemptLog.map((attempt) => attempt.statusCode)).toEqual([404, 204]);
    expect((await hookline.client.getWebhook()).status).toBe('active');
  });
});
