import { describe, expect, it } from 'vitest';
import { configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Retries, dead letters and their recovery, end to end: a real node (3 attempts at 0, 50, 100 ms)
 * delivering to a real receiver that verifies every signature.
 */

describe('retry and dead letter', () => {
  it('retries a failed attempt with the same webhook-id and succeeds (500, then 204)', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: (_delivery, index) => ({ status: index === 0 ? 500 : 204 }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });

    const detail = await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received.map((delivery) => delivery.webhookId)).toEqual([sent.deliveryId, sent.deliveryId]);
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
    expect(receiver.received[1]!.body.equals(receiver.received[0]!.body)).toBe(true);
    expect(detail).toMatchObject({ attempts: 2, maxAttempts: 3, nextAttemptAt: null, lastAttempt: { statusCode: 204, error: null } });
    expect(detail.attemptLog.map((attempt) => [attempt.attempt, attempt.statusCode])).toEqual([[1, 500], [2, 204]]);
    expect(detail.attemptLog[0]!.error).toBe('HTTP 500');
  });

  it('dead-letters after exactly 3 attempts; redrive starts a new round and attempts keep counting', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: () => ({ status: 503 }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const deliveryId = sent.deliveryId!;

    const dead = await waitForDeliveryStatus(hookline.client, deliveryId, 'dead_lettered');
    expect(receiver.byWebhookId(deliveryId)).toHaveLength(3);
    expect(dead).toMatchObject({ attempts: 3, maxAttempts: 3, nextAttemptAt: null, lastAttempt: { statusCode: 503, error: 'HTTP 503' } });
    expect(dead.attemptLog.map((attempt) => attempt.attempt)).toEqual([1, 2, 3]);
    expect((await hookline.client.listDeliveriesPage({ status: 'dead_lettered' })).data.map((delivery) => delivery.id)).toEqual([deliveryId]);

    // A second round that fails again: three more attempts, dead-lettered at 6.
    expect(await hookline.client.redriveDeadLetters()).toEqual({ redriven: 1, wouldRedrive: null });
    const deadAgain = await waitFor(
      async () => {
        const detail = await hookline.client.getDelivery(deliveryId);
        return detail.status === 'dead_lettered' && detail.attempts === 6 ? detail : null;
      },
      { message: 'the second round to dead-letter at 6 attempts' },
    );
    expect(deadAgain.maxAttempts).toBe(6);
    expect(receiver.byWebhookId(deliveryId)).toHaveLength(6);

    receiver.respond = () => ({ status: 204 });
    expect(await hookline.client.redriveDeadLetters({ eventType: 'service.trigger.event' })).toEqual({ redriven: 1, wouldRedrive: null });
    const delivered = await waitForDeliveryStatus(hookline.client, deliveryId, 'succeeded');
    expect(delivered).toMatchObject({ attempts: 7, maxAttempts: 9, lastAttempt: { statusCode: 204 } });
    expect(delivered.attemptLog.map((attempt) => attempt.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    const received = receiver.byWebhookId(deliveryId);
    expect(received).toHaveLength(7);
    expect(received.every((delivery) => delivery.verified)).toBe(true);
    expect(delivered.transitions.filter((transition) => transition.event === 'REDRIVE').map((transition) => [transition.from, transition.to])).toEqual([
      ['dead_lettered', 'pending'],
      ['dead_lettered', 'pending'],
    ]);
  });

  it('retry of one dead-lettered delivery answers 202 pending, then it is delivered; other dead letters stay', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    await configureReceiver(hookline, receiver);
    const first = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
    const second = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { n: 2 } });
    await waitForDeliveryStatus(hookline.client, first.deliveryId!, 'dead_lettered');
    await waitForDeliveryStatus(hookline.client, second.deliveryId!, 'dead_lettered');
    receiver.respond = () => ({ status: 204 });

    const answer = await hookline.api('POST', `/v1/logs/webhook-deliveries/${first.deliveryId}/retry`);
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ id: first.deliveryId, status: 'pending', attempts: 3, maxAttempts: 6 });
    expect(answer.body).not.toHaveProperty('attemptLog');

    const delivered = await waitForDeliveryStatus(hookline.client, first.deliveryId!, 'succeeded');
    expect(delivered.attempts).toBe(4);
    expect(delivered.transitions.filter((transition) => transition.event === 'RETRY')).toEqual([{ from: 'dead_lettered', to: 'pending', event: 'RETRY', at: expect.any(String) }]);
    expect((await hookline.client.getDelivery(second.deliveryId!)).status).toBe('dead_lettered');
    expect(receiver.byWebhookId(first.deliveryId!)).toHaveLength(4);
    expect(receiver.byWebhookId(second.deliveryId!)).toHaveLength(3);
  });

  it('retry of a retrying delivery makes it due now, in the same round', async () => {
    const hookline = await startTestHookline({ retrySchedule: [0, 60_000] });
    const receiver = await startReceiver({ respond: (_delivery, index) => ({ status: index === 0 ? 500 : 204 }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const retrying = await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'retrying');
    expect(Date.parse(retrying.nextAttemptAt!)).toBeGreaterThan(Date.now() + 30_000);

    const beforeRetry = Date.now();
    const answered = await hookline.client.retryDelivery(sent.deliveryId!);
    // Still retrying, as the document says, only due now.
    expect(answered.status).toBe('retrying');
    expect(Date.parse(answered.nextAttemptAt!)).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(answered.nextAttemptAt!)).toBeGreaterThanOrEqual(beforeRetry - 5);
    const delivered = await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded', 3_000);
    expect(delivered).toMatchObject({ attempts: 2, maxAttempts: 2 });
    expect(receiver.received).toHaveLength(2);
  });

  it("honours a receiver's Retry-After on 429 as a floor for the next attempt", async () => {
    const hookline = await startTestHookline({ retrySchedule: [0, 10] });
    const receiver = await startReceiver({ respond: (_delivery, index) => (index === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 204 }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const retrying = await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'retrying');
    const lastAt = Date.parse(retrying.lastAttempt!.at);
    expect(Date.parse(retrying.nextAttemptAt!) - lastAt).toBeGreaterThanOrEqual(1_000);

    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded', 5_000);
    expect(receiver.received[1]!.receivedAt - receiver.received[0]!.receivedAt).toBeGreaterThanOrEqual(900);
  });
});
