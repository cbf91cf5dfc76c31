import { describe, expect, it } from 'vitest';
import { ALL_TYPES, startTestHookline } from '../helpers/hookline.js';
import type { TestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import type { Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Issue 35, part 4: a webhook's `rateLimitPerSecond` and `maxConcurrency`, against real receivers.
 * Each test builds a backlog while the webhook is paused and then resumes it, as a recovering
 * endpoint gets its backlog: all of it due at once.
 */

/** The most requests the receiver got in any one-second window (each window starting at a request). */
function mostInOneSecond(receiver: Receiver): number {
  const times = receiver.received.map((delivery) => delivery.receivedAt).sort((a, b) => a - b);
  let most = 0;
  let end = 0;
  for (let start = 0; start < times.length; start++) {
    while (end < times.length && times[end]! <= times[start]! + 1000) end++;
    most = Math.max(most, end - start);
  }
  return most;
}

async function backlog(hookline: TestHookline, count: number): Promise<void> {
  const events = Array.from({ length: count }, (_, n) => ({ id: `evt_limits_${n}`, type: 'service.trigger.event', data: { n } }));
  const answer = await hookline.api('POST', '/v1/events/batch', { body: { events } });
  expect(answer.status).toBe(202);
}

/** Every event of the backlog arrived at least once. */
function allArrived(receiver: Receiver, count: number): boolean {
  return new Set(receiver.received.map((delivery) => delivery.envelope.id)).size === count;
}

describe('per-webhook delivery limits', () => {
  it('rateLimitPerSecond: 20 paces a backlog of 60: never more than 22 in any one second, and all arrive', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    const config = { callbackUrl: receiver.url, eventTypes: ALL_TYPES, rateLimitPerSecond: 20 };
    await hookline.client.configureWebhook({ ...config, status: 'paused' });
    await backlog(hookline, 60);
    await hookline.client.configureWebhook({ ...config, status: 'active' });
    await waitFor(() => allArrived(receiver, 60), { timeoutMs: 15_000, message: 'all 60 deliveries' });
    // 20 a second plus the bucket's 2; and no faster than the rate: the 60th starts 58 tokens after the first two.
    expect(mostInOneSecond(receiver)).toBeLessThanOrEqual(22);
    const times = receiver.received.map((delivery) => delivery.receivedAt);
    expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(2_800);
  }, 30_000);

  it('maxConcurrency: 2 with a slow receiver: never more than 2 requests in flight, and all arrive', async () => {
    const hookline = await startTestHookline();
    let inFlight = 0;
    let most = 0;
    const receiver = await startReceiver({
      respond: async () => {
        inFlight++;
        most = Math.max(most, inFlight);
        // A slow receiver: each answer takes 40 ms, so that the next attempts would overlap without the cap.
        await new Promise((resolve) => setTimeout(resolve, 40));
        inFlight--;
        return { status: 204 };
      },
    });
    const config = { callbackUrl: receiver.url, eventTypes: ALL_TYPES, maxConcurrency: 2 };
    await hookline.client.configureWebhook({ ...config, status: 'paused' });
    await backlog(hookline, 20);
    await hookline.client.configureWebhook({ ...config, status: 'active' });
    await waitFor(() => allArrived(receiver, 20), { timeoutMs: 10_000, message: 'all 20 deliveries' });
    expect(most).toBe(2);
  });

  it('a new configuration takes new limits at once: lifting a 1/s limit sends the waiting backlog straight away', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    const config = { callbackUrl: receiver.url, eventTypes: ALL_TYPES };
    await hookline.client.configureWebhook({ ...config, status: 'paused', rateLimitPerSecond: 1 });
    await backlog(hookline, 10);
    await hookline.client.configureWebhook({ ...config, status: 'active', rateLimitPerSecond: 1 });
    await waitFor(() => receiver.received.length >= 1, { message: 'the first delivery' });
    // At 1/s the other nine would take nine seconds.
    await hookline.client.configureWebhook({ ...config, status: 'active', rateLimitPerSecond: null });
    await waitFor(() => allArrived(receiver, 10), { timeoutMs: 3_000, message: 'the rest of the backlog, unpaced' });
  });

  it('ordered delivery is paced too, and keeps its order', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    const config = { callbackUrl: receiver.url, eventTypes: ALL_TYPES, ordering: 'fifo' as const, rateLimitPerSecond: 10 };
    await hookline.client.configureWebhook({ ...config, status: 'paused' });
    await backlog(hookline, 15);
    await hookline.client.configureWebhook({ ...config, status: 'active' });
    await waitFor(() => allArrived(receiver, 15), { timeoutMs: 10_000, message: 'all 15 deliveries' });
    expect(mostInOneSecond(receiver)).toBeLessThanOrEqual(11);
    expect(receiver.received.map((delivery) => delivery.envelope.id)).toEqual(Array.from({ length: 15 }, (_, n) => `evt_limits_${n}`));
  });
});
