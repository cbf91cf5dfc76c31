import { describe, expect, it } from 'vitest';
import { HooklineApiError } from '../../src/sdk/index.js';
import { MAX_DATA_DEPTH } from '../../src/transport/event-input.js';
import { ALL_TYPES, configureReceiver, startTestHookline } from '../helpers/hookline.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/** POST /v1/events/batch over real HTTP, a real LMDB directory and a real receiver. */

const event = { type: 'service.trigger.event', data: { hello: 'world' } } as const;
const anError = (status: number, code: string) => ({ status, error: { code, message: expect.any(String), details: expect.any(Array) } });
const accepted = (status: 200 | 202, id: string | RegExp = /^evt_/) => ({ status, id: typeof id === 'string' ? id : expect.stringMatching(id), deliveryId: expect.stringMatching(/^dlv_/) });

describe('POST /v1/events/batch', () => {
  it('answers 207 with one answer per event in request order: stored, invalid, conflict, repeat of an earlier single event, generated id', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
    const single = await hookline.api('POST', '/v1/events', { body: { id: 'evt_single', ...event } });
    expect(single.status).toBe(202);
    await hookline.api('POST', '/v1/events', { body: { id: 'evt_taken', ...event } });

    const answer = await hookline.api('POST', '/v1/events/batch', {
      body: {
        events: [
          { id: 'evt_new', ...event },
          { id: 'evt_bad', type: 'service.unknown', data: {} },
          { id: 'evt_taken', ...event, data: { other: true } },
          { id: 'evt_single', ...event },
          { ...event, data: { n: 5 } },
        ],
      },
    });
    expect(answer.status).toBe(207);
    expect(answer.body.data).toEqual([
      accepted(202, 'evt_new'),
      anError(400, 'validation_failed'),
      anError(409, 'event_id_conflict'),
      { status: 200, ...single.body },
      accepted(202),
    ]);
    // Where the problem is, as a single POST would say it, inside the batch.
    expect(answer.body.data[1].error.details).toEqual([{ path: 'body.events.1.type', message: expect.any(String) }]);
    for (const [eventId, count] of [['evt_new', 1], ['evt_single', 1], ['evt_taken', 1], ['evt_bad', 0], [answer.body.data[4].id, 1]] as const) {
      expect((await hookline.client.listDeliveriesPage({ eventId })).data, eventId).toHaveLength(count);
    }
  });

  it('refuses an event nested deeper than the limit on its own (400 in its place, 207), storing the others once; alone it is a 400', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
    // Written as text: deep enough that JSON.stringify overflows the stack (it did in Hookline: 500, the first event stored anyway).
    const deep = (levels: number) => `{"d":${'['.repeat(levels)}${']'.repeat(levels)}}`;
    const batch = `{"events":[{"type":"${event.type}","data":{"n":1}},{"type":"${event.type}","data":${deep(6_000)}},{"type":"${event.type}","data":${deep(MAX_DATA_DEPTH - 1)}}]}`;
    const answer = await hookline.api('POST', '/v1/events/batch', { body: batch });
    expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(207);
    expect(answer.body.data).toEqual([accepted(202), anError(400, 'validation_failed'), accepted(202)]);
    expect(answer.body.data[1].error.details).toEqual([{ path: 'body.events.1.data', message: `must not nest objects and arrays more than ${MAX_DATA_DEPTH} deep` }]);
    for (const index of [0, 2]) expect((await hookline.client.listDeliveriesPage({ eventId: answer.body.data[index].id })).data).toHaveLength(1);
    expect((await hookline.client.listEventsPage()).data).toHaveLength(2);

    const alone = await hookline.api('POST', '/v1/events', { body: `{"type":"${event.type}","data":${deep(MAX_DATA_DEPTH)}}` });
    expect(alone.status).toBe(400);
    expect(alone.body.error.code).toBe('validation_failed');
  });

  it('copies of one id inside a batch: the first is stored, an identical copy is a repeat with its answer, a different body a conflict', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const copy = { id: 'evt_twice', ...event, metadata: { tenant_id: 't1' } };
    const answer = await hookline.api('POST', '/v1/events/batch', {
      body: { events: [copy, { metadata: { tenant_id: 't1' }, data: { hello: 'world' }, type: copy.type, id: copy.id }, { ...copy, data: { hello: 'there' } }] },
    });
    expect(answer.status).toBe(207);
    expect(answer.body.data).toEqual([accepted(202, 'evt_twice'), { status: 200, id: 'evt_twice', deliveryId: answer.body.data[0].deliveryId }, anError(409, 'event_id_conflict')]);

    // All repeats now: 202, and still one delivery, delivered once.
    const again = await hookline.api('POST', '/v1/events/batch', { body: { events: [copy, copy] } });
    expect(again).toMatchObject({ status: 202, body: { data: [{ status: 200, ...answer.body.data[1] }, { status: 200, ...answer.body.data[1] }] } });
    await waitFor(() => receiver.received.length === 1, { message: 'the one delivery' });
    expect((await hookline.client.listDeliveriesPage({ eventId: 'evt_twice' })).data).toHaveLength(1);
  });

  it('answers 202 when every event is stored, and makes one delivery of each', async () => {
    const hookline = await startTestHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const events = Array.from({ length: 60 }, (_, index) => (index % 2 === 0 ? { id: `evt_all_${index}`, ...event, data: { index } } : { ...event, data: { index } }));
    const answer = await hookline.api('POST', '/v1/events/batch', { body: { events } });
    expect(answer.status).toBe(202);
    expect(answer.body.data).toHaveLength(60);
    answer.body.data.forEach((item: { status: number; id: string }, index: number) => {
      expect(item).toEqual(accepted(202, index % 2 === 0 ? `evt_all_${index}` : /^evt_/));
    });
    // A repeat of the whole batch with the given ids changes nothing.
    const ids = events.filter((candidate) => 'id' in candidate);
    expect((await hookline.api('POST', '/v1/events/batch', { body: { events: ids } })).body.data.every((item: { status: number }) => item.status === 200)).toBe(true);

    await waitFor(() => new Set(receiver.received.map((delivery) => delivery.envelope.id)).size >= 60, { message: '60 deliveries' });
    // One delivery per event: an attempt timed out by the test's 500 ms receiver timeout on a loaded
    // machine is sent again under its own webhook-id (at least once), never as another delivery.
    const webhookIdsByEvent = new Map<string, Set<string>>();
    for (const delivery of receiver.received) webhookIdsByEvent.set(delivery.envelope.id, (webhookIdsByEvent.get(delivery.envelope.id) ?? new Set()).add(delivery.webhookId));
    expect([...webhookIdsByEvent.values()].every((webhookIds) => webhookIds.size === 1)).toBe(true);
    const received = [...webhookIdsByEvent.keys()].sort();
    expect(received).toEqual(answer.body.data.map((item: { id: string }) => item.id).sort());
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
    expect(received.map((id) => (receiver.received.find((delivery) => delivery.envelope.id === id)!.envelope.data as { index: number }).index).sort((a, b) => a - b)).toEqual(events.map((_, index) => index));
  });

  it('answers 413 payload_too_large over HOOKLINE_MAX_BATCH_BODY, and refuses alone an event over HOOKLINE_MAX_BODY', async () => {
    const hookline = await startTestHookline({ maxBodyBytes: 1024, maxBatchBodyBytes: 8 * 1024 });
    const big = { ...event, data: { blob: 'x'.repeat(2000) } };
    // Over the single-event limit, under the batch one: only the big event is refused.
    const mixed = await hookline.api('POST', '/v1/events/batch', { body: { events: [{ id: 'evt_small', ...event }, big] } });
    expect(mixed.status).toBe(207);
    expect(mixed.body.data).toEqual([{ status: 202, id: 'evt_small', deliveryId: null }, anError(413, 'payload_too_large')]);
    expect(mixed.body.data[1].error.details[0].path).toBe('body.events.1');
    // A body this size is refused before it is read, and nothing is stored.
    const tooLarge = await hookline.api('POST', '/v1/events/batch', { body: { events: [{ id: 'evt_in_large', ...event }, ...Array.from({ length: 5 }, () => big)] } });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.error.code).toBe('payload_too_large');
    expect((await hookline.api('POST', '/v1/events/evt_in_large/replay')).body.error.code).toBe('event_not_found');
  });

  it('answers 400 for a body that is not 1 to 1000 events', async () => {
    const hookline = await startTestHookline();
    for (const body of [{ events: [] }, { events: Array.from({ length: 1001 }, () => event) }, { events: event }, { event: [event] }, [event]]) {
      const answer = await hookline.api('POST', '/v1/events/batch', { body });
      expect(answer.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(answer.body.error.code).toBe('validation_failed');
    }
  });

  it('the rate limit counts events, not requests; a batch larger than a second of it still passes once, in debt', async () => {
    const hookline = await startTestHookline({ rateLimit: 10 });
    expect((await hookline.api('POST', '/v1/events/batch', { body: { events: Array.from({ length: 8 }, () => event) } })).status).toBe(202);
    const over = await hookline.api('POST', '/v1/events/batch', { body: { events: Array.from({ length: 5 }, () => event) } });
    expect(over.status).toBe(429);
    expect(over.body.error).toMatchObject({ code: 'rate_limited', message: expect.stringContaining('10 events per second') });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    // Refused whole: nothing of it was stored. Once the bucket is full again, 25 events pass and leave it in debt.
    const full = await waitFor(async () => {
      const answer = await hookline.api('POST', '/v1/events/batch', { body: { events: Array.from({ length: 25 }, () => event) } });
      return answer.status === 202 ? answer : null;
    }, { timeoutMs: 5_000, intervalMs: 200, message: 'a full bucket' });
    expect(full.body.data).toHaveLength(25);
    const after = await hookline.api('POST', '/v1/events', { body: event });
    expect(after.status).toBe(429);
    expect(Number(after.headers.get('retry-after'))).toBeGreaterThanOrEqual(2);
  });

  it('refuses the whole batch with 503 and Retry-After when the node is overloaded; nothing of it is stored', async () => {
    const hookline = await startTestHookline({ maxWaitingPerProject: 2 });
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
    expect((await hookline.api('POST', '/v1/events/batch', { body: { events: [{ id: 'evt_o1', ...event }, { id: 'evt_o2', ...event }] } })).status).toBe(202);
    const refused = await hookline.api('POST', '/v1/events/batch', { body: { events: [{ id: 'evt_o3', ...event }, { id: 'evt_o1', ...event }] } });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('overloaded');
    expect(refused.headers.get('retry-after')).toBe('5');
    expect((await hookline.api('POST', '/v1/events/evt_o3/replay')).body.error.code).toBe('event_not_found');
  });

  it("counts the batch's own events against HOOKLINE_MAX_WAITING_PER_PROJECT: with room for 3, the first 3 of 10 are stored and the rest refused in their places", async () => {
    const hookline = await startTestHookline({ maxWaitingPerProject: 3 });
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ALL_TYPES });
    const answer = await hookline.api('POST', '/v1/events/batch', { body: { events: Array.from({ length: 10 }, (_, n) => ({ id: `evt_room_${n}`, ...event })) } });
    expect(answer.status).toBe(207);
    expect(answer.body.data.map((item: { status: number }) => item.status)).toEqual([202, 202, 202, 503, 503, 503, 503, 503, 503, 503]);
    expect(answer.body.data[3].error.code).toBe('overloaded');
    expect(hookline.node.engine.actorFor('default').waiting).toBe(3);
  });

  it('SDK sendEvents: one item per event in order, refused ones as HooklineApiError; unknown options are refused before sending', async () => {
    const hookline = await startTestHookline();
    await hookline.client.configureWebhook({ callbackUrl: 'http://127.0.0.1:9/x', status: 'paused', eventTypes: ['service.trigger.event'] });
    const first = await hookline.client.sendEvent({ id: 'evt_sdk_1', ...event });
    const items = await hookline.client.sendEvents([
      { id: 'evt_sdk_1', ...event },
      { id: 'evt_sdk_2', type: 'service.trigger.disabled', data: {}, timestamp: new Date('2026-11-21T23:03:49.123Z') },
      { id: 'evt_sdk_1', ...event, data: {} },
    ]);
    expect(items[0]).toEqual({ ok: true, ...first, duplicate: true });
    expect(items[1]).toEqual({ ok: true, id: 'evt_sdk_2', deliveryId: null, duplicate: false });
    expect(items[2]).toMatchObject({ ok: false, error: { status: 409, code: 'event_id_conflict', retryable: false } });
    expect((items[2] as { error: unknown }).error).toBeInstanceOf(HooklineApiError);

    await expect(hookline.client.sendEvents([{ ...event, tenant: 'x' } as never])).rejects.toThrow(/sendEvents: unknown option "tenant" in events\[0\]/);
    await expect(hookline.client.sendEvents([event], { timeout: 5 } as never)).rejects.toThrow(TypeError);
    await expect(hookline.client.sendEvents([])).rejects.toMatchObject({ status: 400, code: 'validation_failed' });
  });
});
