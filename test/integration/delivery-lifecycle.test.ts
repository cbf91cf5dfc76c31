import { describe, expect, it } from 'vitest';
import { ALL_TYPES, configureReceiver, startTestHookline, waitForDeliveryStatus, type TestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/** Holding while paused, failed attempts of every kind, and the history the detail route records. */

async function metric(hookline: TestHookline, name: string): Promise<number> {
  const text = String((await hookline.api('GET', '/metrics', { key: null })).body);
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

describe('a paused configuration', () => {
  it('holds matching deliveries in pending and PUT active releases them', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver, { status: 'paused' });
    const sent = await Promise.all([1, 2, 3].map((n) => hookline.client.sendEvent({ type: 'service.trigger.event', data: { n } })));

    // Every one is due and waiting in the ready queue, held back by the paused endpoint.
    await waitFor(async () => (await metric(hookline, 'hookline_ready_queue_depth')) === 3, { message: 'three held deliveries in the ready queue' });
    for (const { deliveryId } of sent) {
      expect(await hookline.client.getDelivery(deliveryId!)).toMatchObject({ status: 'pending', attempts: 0, lastAttempt: null });
    }
    expect(receiver.received).toHaveLength(0);

    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    for (const { deliveryId } of sent) await waitForDeliveryStatus(hookline.client, deliveryId!, 'succeeded');
    expect(receiver.received.map((delivery) => delivery.webhookId).sort()).toEqual(sent.map((answer) => answer.deliveryId).sort());
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
    expect(await metric(hookline, 'hookline_ready_queue_depth')).toBe(0);
  });

  it('pausing holds later retries too; the round resumes where it was', async () => {
    const hookline = await startTestHookline({ retrySchedule: [0, 300, 300] });
    const receiver = await startReceiver({ respond: (_delivery, index) => ({ status: index === 0 ? 500 : 204 }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'retrying');
    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'paused', eventTypes: ALL_TYPES });

    await waitFor(async () => (await metric(hookline, 'hookline_ready_queue_depth')) === 1, { message: 'the due retry held in the ready queue' });
    expect(await hookline.client.getDelivery(sent.deliveryId!)).toMatchObject({ status: 'retrying', attempts: 1 });
    expect(receiver.received).toHaveLength(1);

    await hookline.client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
    expect(await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded')).toMatchObject({ attempts: 2, maxAttempts: 3 });
  });
});

describe('failed attempts', () => {
  it('a receiver that never answers times out: statusCode null, error set', async () => {
    const hookline = await startTestHookline({ retrySchedule: [0, 50] });
    const receiver = await startReceiver({ respond: () => 'hang' });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });

    const dead = await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered', 5_000);
    expect(dead.lastAttempt).toEqual({ at: expect.any(String), statusCode: null, durationMs: expect.any(Number), error: expect.stringMatching(/timeout/) });
    expect(dead.lastAttempt!.durationMs).toBeGreaterThanOrEqual(450);
    expect(dead.attemptLog).toHaveLength(2);
    expect(dead.attemptLog.every((attempt) => attempt.statusCode === null && attempt.error !== null)).toBe(true);
    expect(receiver.received).toHaveLength(2);
  });

  it('a redirect is not followed and counts as a failure', async () => {
    const hookline = await startTestHookline();
    const target = await startReceiver();
    const receiver = await startReceiver({ respond: () => ({ status: 302, headers: { location: target.url } }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });

    const dead = await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered');
    expect(dead).toMatchObject({ attempts: 3, lastAttempt: { statusCode: 302, error: expect.stringMatching(/redirect/) } });
    expect(receiver.received).toHaveLength(3);
    expect(target.received).toHaveLength(0);
  });

  it('a refused connection counts as a failure with no status code', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    const url = receiver.url;
    await receiver.close();
    await hookline.client.configureWebhook({ callbackUrl: url, status: 'active', eventTypes: ALL_TYPES });
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const dead = await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered');
    expect(dead.lastAttempt).toMatchObject({ statusCode: null, error: expect.stringMatching(/refused/) });
  });
});

describe('the detail route', () => {
  it('records attemptLog and transitions in order', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver({ respond: (_delivery, index) => (index < 2 ? { status: 500, body: `no ${index}` } : { status: 201, body: 'ok' }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    const detail = await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'succeeded');

    expect(detail.attemptLog.map(({ attempt, statusCode, error, responseBody }) => ({ attempt, statusCode, error, responseBody }))).toEqual([
      { attempt: 1, statusCode: 500, error: 'HTTP 500', responseBody: 'no 0' },
      { attempt: 2, statusCode: 500, error: 'HTTP 500', responseBody: 'no 1' },
      { attempt: 3, statusCode: 201, error: null, responseBody: 'ok' },
    ]);
    const attemptTimes = detail.attemptLog.map((attempt) => Date.parse(attempt.at));
    // 0, 50, 100 ms before attempts 1, 2, 3 (no jitter).
    expect(attemptTimes[1]! - attemptTimes[0]!).toBeGreaterThanOrEqual(50);
    expect(attemptTimes[2]! - attemptTimes[1]!).toBeGreaterThanOrEqual(100);

    expect(detail.transitions.map(({ from, to, event }) => [from, to, event])).toEqual([
      [null, 'pending', 'CREATED'],
      ['pending', 'delivering', 'START_ATTEMPT'],
      ['delivering', 'failed', 'ATTEMPT_FAILED'],
      ['failed', 'retrying', 'ATTEMPT_FAILED'],
      ['retrying', 'delivering', 'START_ATTEMPT'],
      ['delivering', 'failed', 'ATTEMPT_FAILED'],
      ['failed', 'retrying', 'ATTEMPT_FAILED'],
      ['retrying', 'delivering', 'START_ATTEMPT'],
      ['delivering', 'succeeded', 'ATTEMPT_SUCCEEDED'],
    ]);
    const times = detail.transitions.map((transition) => Date.parse(transition.at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(times[0]).toBe(Date.parse(detail.createdAt));
    expect(times.at(-1)).toBe(Date.parse(detail.updatedAt));
  });
});

describe('releasing a project (a cluster partition moving away)', () => {
  it('resolves only once the attempt in flight has finished and its outcome is committed to LMDB', async () => {
    const hookline = await startTestHookline();
    let answer: () => void = () => {};
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const receiver = await startReceiver({ respond: async () => (await answered, { status: 204 }) });
    await configureReceiver(hookline, receiver);
    const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
    await waitFor(() => receiver.received.length === 1, { message: 'the attempt at the receiver' });

    const { engine } = hookline.node;
    const projectId = engine.store.allProjects().find((project) => engine.store.getDeliveryHead(project.id, sent.deliveryId!))!.id;
    let released = false;
    const releasing = engine.releaseProjects(() => true).then(() => (released = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(released).toBe(false); // the attempt is still in flight
    answer();
    await releasing;
    // Read at once, from LMDB: the outcome's commit is what the release waited for.
    expect(engine.store.getDeliveryHead(projectId, sent.deliveryId!)).toMatchObject({ status: 'succeeded' });
  });
});
