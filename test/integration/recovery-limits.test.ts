import { describe, expect, it, onTestFinished } from 'vitest';
import type { EventType } from '../../src/sdk/index.js';
import { configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import type { ApiAnswer, TestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Retry, redrive and replay take deliveries into memory and write records as an ingest does, so
 * they meet the limits ingest meets: HOOKLINE_MAX_WAITING_PER_PROJECT (503 `overloaded`) and
 * HOOKLINE_MAX_DATA_SIZE (503 `storage_full`), with Retry-After and nothing changed. A redrive is
 * all or none, and says how many it would start and how many fit.
 */

const REDRIVE = '/v1/logs/webhook-deliveries/redrive';

/** The project's waiting deliveries as `/metrics` reports them (what HOOKLINE_MAX_WAITING_PER_PROJECT bounds). */
async function liveDeliveries(hookline: TestHookline): Promise<number> {
  const metrics = await (await fetch(`${hookline.url}/metrics`)).text();
  return Number(/^hookline_waiting_deliveries (\d+)$/m.exec(metrics)![1]);
}

function expectRefused(answer: ApiAnswer, code: 'overloaded' | 'storage_full') {
  expect(answer.status, JSON.stringify(answer.body)).toBe(503);
  expect(answer.body.error.code).toBe(code);
  expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
}

/** Sends an event of `type` and waits until its delivery is dead-lettered (the receiver answers 500). */
async function deadLetter(hookline: TestHookline, id: string, type: EventType): Promise<string> {
  const sent = await hookline.client.sendEvent({ id, type, data: {} });
  await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered');
  return sent.deliveryId!;
}

/** Each delivery's status as the log shows it. */
async function statuses(hookline: TestHookline, ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await hookline.client.getDelivery(id)).status));
}

describe('recovery under HOOKLINE_MAX_WAITING_PER_PROJECT', () => {
  it('retry, redrive and replay are refused 503 overloaded and change nothing when they do not fit; a redrive narrowed to fit runs; with room again they all do', async () => {
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    const hookline = await startTestHookline({ maxWaitingPerProject: 3 });
    await configureReceiver(hookline, receiver, { eventTypes: ['service.trigger.event', 'service.trigger.disabled'] });
    const dead = [await deadLetter(hookline, 'evt_dead_1', 'service.trigger.event'), await deadLetter(hookline, 'evt_dead_2', 'service.trigger.event'), await deadLetter(hookline, 'evt_dead_3', 'service.trigger.disabled')];
    await waitFor(async () => (await liveDeliveries(hookline)) === 0, { message: 'the dead letters out of memory' });

    // Two deliveries held by a paused webhook: room for one more.
    await configureReceiver(hookline, receiver, { status: 'paused', eventTypes: ['service.trigger.event', 'service.trigger.disabled'] });
    const held = [(await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} })).deliveryId!, (await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} })).deliveryId!];
    expect(await liveDeliveries(hookline)).toBe(2);

    // Three dead letters do not fit in a room of one: none is redriven, and the answer says so.
    const whole = await hookline.api('POST', REDRIVE, { body: {} });
    expectRefused(whole, 'overloaded');
    expect(whole.body.error.message).toMatch(/would start 3 dead letters.*room for 1 more.*HOOKLINE_MAX_WAITING_PER_PROJECT.*nothing was redriven.*since, until or eventType/);
    expect(whole.body.error.details).toEqual([expect.objectContaining({ reqId: expect.any(String) }), expect.objectContaining({ wouldRedrive: 3, room: 1 })]);
    expect(await statuses(hookline, dead)).toEqual(['dead_lettered', 'dead_lettered', 'dead_lettered']);
    expect(await liveDeliveries(hookline)).toBe(2);

    // The dry run still answers, and tells whether it fits.
    expect((await hookline.api('POST', REDRIVE, { body: { dryRun: true } })).body).toEqual({ redriven: 0, wouldRedrive: 3, fits: false });
    expect((await hookline.api('POST', REDRIVE, { body: { dryRun: true, eventType: 'service.trigger.disabled' } })).body).toEqual({ redriven: 0, wouldRedrive: 1, fits: true });
    expect(await hookline.client.redriveDeadLetters({ dryRun: true })).toEqual({ redriven: 0, wouldRedrive: 3, fits: false });

    // Narrowed to what fits, it runs, and the node is full.
    expect(await hookline.api('POST', REDRIVE, { body: { eventType: 'service.trigger.disabled' } })).toMatchObject({ status: 202, body: { redriven: 1 } });
    expect(await statuses(hookline, dead)).toEqual(['dead_lettered', 'dead_lettered', 'pending']);
    expect(await liveDeliveries(hookline)).toBe(3);

    // Full: a retry of a dead letter and a replay are refused, and change nothing either.
    const retry = await hookline.api('POST', `/v1/logs/webhook-deliveries/${dead[0]}/retry`);
    expectRefused(retry, 'overloaded');
    expect(retry.body.error.message).toMatch(new RegExp(`HOOKLINE_MAX_WAITING_PER_PROJECT.*delivery ${dead[0]} was not retried`));
    const replay = await hookline.api('POST', '/v1/events/evt_dead_1/replay');
    expectRefused(replay, 'overloaded');
    expect(replay.body.error.message).toMatch(/HOOKLINE_MAX_WAITING_PER_PROJECT.*event evt_dead_1 was not replayed/);
    expect(await statuses(hookline, dead)).toEqual(['dead_lettered', 'dead_lettered', 'pending']);
    expect((await hookline.client.getDelivery(dead[0]!)).transitions.map((transition) => transition.event)).not.toContain('RETRY');
    expect(hookline.node.engine.store.getEvent('default', 'evt_dead_1')!.deliveryIds).toEqual([dead[0]]);
    expect((await hookline.client.getStats()).counts).toMatchObject({ pending: 3, dead_lettered: 2 });
    expect(await liveDeliveries(hookline)).toBe(3);

    // The held deliveries finish: room again, and the same calls are taken.
    receiver.respond = () => ({ status: 204 });
    await configureReceiver(hookline, receiver, { eventTypes: ['service.trigger.event', 'service.trigger.disabled'] });
    for (const id of [...held, dead[2]!]) await waitForDeliveryStatus(hookline.client, id, 'succeeded');
    await waitFor(async () => (await liveDeliveries(hookline)) === 0, { message: 'room again' });
    expect((await hookline.api('POST', `/v1/logs/webhook-deliveries/${dead[0]}/retry`)).status).toBe(202);
    expect((await hookline.api('POST', '/v1/events/evt_dead_1/replay')).status).toBe(202);
    expect(await hookline.api('POST', REDRIVE, { body: {} })).toMatchObject({ status: 202, body: { redriven: 1 } });
    await waitForDeliveryStatus(hookline.client, dead[1]!, 'succeeded');
  });
});

describe('recovery with the data directory at HOOKLINE_MAX_DATA_SIZE', () => {
  it('retry, redrive and replay are refused 503 storage_full and change nothing; the dry run still answers', async () => {
    const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const before = await startTestHookline({ dataDir: dir.path });
    await configureReceiver(before, receiver);
    const deliveryId = await deadLetter(before, 'evt_dead', 'service.trigger.event');
    await before.close();

    // Restarted with a quota below what the directory holds already.
    const hookline = await startTestHookline({ dataDir: dir.path, maxDataBytes: 4096 });
    expectRefused(await hookline.api('POST', '/v1/events', { body: { type: 'service.trigger.event', data: {} } }), 'storage_full');
    const retry = await hookline.api('POST', `/v1/logs/webhook-deliveries/${deliveryId}/retry`);
    expectRefused(retry, 'storage_full');
    expect(retry.body.error.message).toMatch(/HOOKLINE_MAX_DATA_SIZE.*was not retried/);
    expectRefused(await hookline.api('POST', REDRIVE, { body: {} }), 'storage_full');
    expectRefused(await hookline.api('POST', '/v1/events/evt_dead/replay'), 'storage_full');

    expect((await hookline.client.getDelivery(deliveryId)).status).toBe('dead_lettered');
    expect(hookline.node.engine.store.getEvent('default', 'evt_dead')!.deliveryIds).toEqual([deliveryId]);
    expect(await liveDeliveries(hookline)).toBe(0);
    expect(await hookline.client.redriveDeadLetters({ dryRun: true })).toEqual({ redriven: 0, wouldRedrive: 1, fits: true });
    expect(receiver.received).toHaveLength(3);
  });
});
