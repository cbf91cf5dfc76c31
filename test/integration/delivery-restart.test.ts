import { describe, expect, it, onTestFinished } from 'vitest';
import { ALL_TYPES, configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * A graceful stop and a start on the same LMDB directory, in process: what was live resumes exactly
 * once, and configuration, secrets and event ids are kept.
 */

function sharedDataDir(): string {
  const dir = makeTempDir();
  // Registered first, so it runs after every node of the test has closed.
  onTestFinished(() => dir.remove());
  return dir.path;
}

describe('restart on the same data', () => {
  it('attempts a retrying delivery that fell due while the node was down exactly once', async () => {
    const dataDir = sharedDataDir();
    const receiver = await startReceiver({ respond: (_delivery, index) => ({ status: index === 0 ? 500 : 204 }) });
    const first = await startTestHookline({ dataDir, retrySchedule: [0, 100] });
    await configureReceiver(first, receiver);
    const sent = await first.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const retrying = await waitForDeliveryStatus(first.client, sent.deliveryId!, 'retrying');
    await first.close();
    const dueAt = Date.parse(retrying.nextAttemptAt!);
    await waitFor(() => Date.now() > dueAt + 20, { message: 'the retry to fall due while stopped' });
    expect(receiver.received).toHaveLength(1);

    const second = await startTestHookline({ dataDir, retrySchedule: [0, 100] });
    const detail = await waitForDeliveryStatus(second.client, sent.deliveryId!, 'succeeded');
    expect(detail).toMatchObject({ attempts: 2, maxAttempts: 2 });
    expect(detail.transitions.map(({ from, to, event }) => [from, to, event]).slice(-2)).toEqual([
      ['retrying', 'delivering', 'START_ATTEMPT'],
      ['delivering', 'succeeded', 'ATTEMPT_SUCCEEDED'],
    ]);
    expect(detail.attemptLog.map((attempt) => attempt.attempt)).toEqual([1, 2]);
    expect(receiver.received.map((delivery) => delivery.webhookId)).toEqual([sent.deliveryId, sent.deliveryId]);
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
  });

  it('keeps a retrying delivery that is not yet due waiting for its time', async () => {
    const dataDir = sharedDataDir();
    const receiver = await startReceiver({ respond: (_delivery, index) => ({ status: index === 0 ? 500 : 204 }) });
    const first = await startTestHookline({ dataDir, retrySchedule: [0, 1_500] });
    await configureReceiver(first, receiver);
    const sent = await first.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const retrying = await waitForDeliveryStatus(first.client, sent.deliveryId!, 'retrying');
    await first.close();

    const second = await startTestHookline({ dataDir, retrySchedule: [0, 1_500] });
    const resumed = await second.client.getDelivery(sent.deliveryId!);
    if (Date.now() < Date.parse(retrying.nextAttemptAt!)) {
      expect(resumed).toMatchObject({ status: 'retrying', nextAttemptAt: retrying.nextAttemptAt });
    }
    const detail = await waitForDeliveryStatus(second.client, sent.deliveryId!, 'succeeded', 5_000);
    expect(Date.parse(detail.attemptLog[1]!.at)).toBeGreaterThanOrEqual(Date.parse(retrying.nextAttemptAt!));
    expect(receiver.received).toHaveLength(2);
  });

  it('keeps held deliveries, configuration, secret and event ids', async () => {
    const dataDir = sharedDataDir();
    const receiver = await startReceiver();
    const first = await startTestHookline({ dataDir });
    const secret = await configureReceiver(first, receiver, { status: 'paused', eventTypes: ['service.trigger.event'] });
    const config = await first.client.getWebhook();
    const sent = await first.client.sendEvent({ id: 'evt_kept', type: 'service.trigger.event', data: { kept: true } });
    await first.close();

    const second = await startTestHookline({ dataDir });
    expect(await second.client.getWebhook()).toEqual(config);
    expect((await second.client.getSecret()).secret).toBe(secret);
    expect(await second.client.getDelivery(sent.deliveryId!)).toMatchObject({ status: 'pending', attempts: 0 });
    expect(await second.client.sendEvent({ id: 'evt_kept', type: 'service.trigger.event', data: { kept: true } })).toEqual({ ...sent, duplicate: true });
    expect(receiver.received).toHaveLength(0);

    await second.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    await waitForDeliveryStatus(second.client, sent.deliveryId!, 'succeeded');
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]!.verified).toBe(true);
    expect(receiver.received[0]!.envelope).toMatchObject({ id: 'evt_kept', data: { kept: true } });
  });
});
