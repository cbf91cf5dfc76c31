import { createServer, type Server, type Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { HooklineApiError, HooklineClient, isHooklineApiError, type RedriveFilter, type RequestOptions, type SendEventInput } from '../../src/sdk/index.js';
import { newSortableId } from '../../src/store/ids.js';
import { configureReceiver, startTestHookline, waitForDeliveryStatus } from '../helpers/hookline.js';
import { freePort } from '../helpers/nats.js';
import { startReceiver } from '../helpers/receiver.js';

/** The SDK client against a real node: dry-run redrive, unknown options, stats, and no answer at all. */

/** A real node whose one delivery is dead-lettered (a receiver that always answers 500). */
async function nodeWithDeadLetter() {
  const hookline = await startTestHookline();
  const receiver = await startReceiver({ respond: () => ({ status: 500 }) });
  await configureReceiver(hookline, receiver);
  const sent = await hookline.client.sendEvent({ type: 'service.trigger.event', data: {} });
  await waitForDeliveryStatus(hookline.client, sent.deliveryId!, 'dead_lettered');
  return { hookline, receiver, deliveryId: sent.deliveryId! };
}

/** Counts the requests the client really sends (the platform fetch underneath). */
function countingClient(baseUrl: string, apiKey: string) {
  const sent: string[] = [];
  const client = new HooklineClient({
    baseUrl,
    apiKey,
    fetch: (input, init) => {
      sent.push(`${init?.method ?? 'GET'} ${String(input)}`);
      return fetch(input, init);
    },
  });
  return { client, sent };
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to reject');
}

describe('redriveDeadLetters({ dryRun: true })', () => {
  it('answers how many a redrive would start and changes nothing; a real redrive then starts them', async () => {
    const { hookline, receiver, deliveryId } = await nodeWithDeadLetter();
    const attemptsBefore = receiver.received.length;

    expect(await hookline.client.redriveDeadLetters({ dryRun: true })).toEqual({ redriven: 0, wouldRedrive: 1, fits: true });
    expect(await hookline.client.redriveDeadLetters({ dryRun: true, eventType: 'service.trigger.disabled' })).toEqual({ redriven: 0, wouldRedrive: 0, fits: true });
    // Nothing moved: still a dead letter, no new attempt reached the receiver.
    expect((await hookline.client.getDelivery(deliveryId)).status).toBe('dead_lettered');
    expect((await hookline.client.getStats()).counts.dead_lettered).toBe(1);
    expect(receiver.received).toHaveLength(attemptsBefore);

    receiver.respond = () => ({ status: 204 });
    expect(await hookline.client.redriveDeadLetters()).toEqual({ redriven: 1, wouldRedrive: null });
    await waitForDeliveryStatus(hookline.client, deliveryId, 'succeeded');
  });
});

describe('options a method does not know', () => {
  it('are a TypeError naming them, and nothing is sent', async () => {
    const { hookline, deliveryId } = await nodeWithDeadLetter();
    const { client, sent } = countingClient(hookline.url, 'test-key');

    // Misspelt dryRun: before the fix it was dropped and the call really redrove.
    const misspelt = await rejection(client.redriveDeadLetters({ dryrun: true } as RedriveFilter));
    expect(misspelt).toBeInstanceOf(TypeError);
    expect(String(misspelt)).toMatch(/redriveDeadLetters: unknown option "dryrun" in filter; it accepts since, until, eventType, dryRun/);

    const cases: [string, () => Promise<unknown>][] = [
      ['sendEvent', () => client.sendEvent({ type: 'service.trigger.event', data: {}, idempotencyKey: 'k' } as SendEventInput)],
      ['getWebhook', () => client.getWebhook({ timeout: 1000 } as RequestOptions)],
      ['listDeliveriesPage', () => client.listDeliveriesPage({ state: 'dead_lettered' } as object)],
      ['listDeliveries', async () => client.listDeliveries({ pageSize: 5 } as object)],
      ['rotateSecret', () => client.rotateSecret({ grace: 0 } as object)],
      ['configureWebhook', () => client.configureWebhook({ callbackUrl: 'http://127.0.0.1:1/', status: 'active', eventTypes: [], events: [] } as never)],
      ['getStats', () => client.getStats({ signal: undefined, verbose: true } as RequestOptions)],
      ['listEventsPage', () => client.listEventsPage({ type: 'service.trigger.event' } as object)],
      ['listEvents', async () => client.listEvents({ pageSize: 5 } as object)],
      ['getEvent', () => client.getEvent('evt_x', { timeout: 1000 } as RequestOptions)],
      ['listRejectedEventsPage', () => client.listRejectedEventsPage({ pageSize: 5 } as object)],
      ['listRejectedEvents', async () => client.listRejectedEvents({ cursor: 'rej_x' } as object)],
    ];
    for (const [method, call] of cases) {
      const error = await rejection(call());
      expect(error, method).toBeInstanceOf(TypeError);
      expect(String(error), method).toMatch(new RegExp(`HooklineClient\\.${method}: unknown option`));
    }

    expect(sent).toEqual([]);
    expect((await hookline.client.getDelivery(deliveryId)).status).toBe('dead_lettered');
    expect((await hookline.client.getStats()).counts).toMatchObject({ dead_lettered: 1, pending: 0 });
  });
});

describe('listEvents(), listEventsPage(), getEvent()', () => {
  it('walk the stored events newest first page by page, fetching a page only when iteration reaches it', async () => {
    const hookline = await startTestHookline();
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) ids.push((await hookline.client.sendEvent({ type: n === 2 ? 'service.trigger.disabled' : 'service.trigger.event', data: { n } })).id);
    // Ids made in one millisecond order by their random part: newest first is the ids in descending order.
    const newestFirst = [...ids].sort().reverse();

    const all: string[] = [];
    for await (const event of hookline.client.listEvents({ limit: 2 })) all.push(event.id);
    expect(all).toEqual(newestFirst);
    const disabled: string[] = [];
    for await (const event of hookline.client.listEvents({ eventType: 'service.trigger.disabled' })) disabled.push(event.id);
    expect(disabled).toEqual([ids[2]]);

    const { client, sent } = countingClient(hookline.url, 'test-key');
    for await (const event of client.listEvents({ limit: 2 })) if (event.id === newestFirst[1]) break;
    expect(sent).toHaveLength(1);
    const second = await client.listEventsPage({ limit: 2, cursor: newestFirst[1] });
    expect(second.data.map((event) => event.id)).toEqual(newestFirst.slice(2, 4));

    const event = await hookline.client.getEvent(ids[0]!);
    expect(event).toMatchObject({ id: ids[0], type: 'service.trigger.event', payload: { id: ids[0], data: { n: 0 } } });
    expect(Buffer.from(event.body).equals(Buffer.from(hookline.node.engine.store.getEvent('default', ids[0]!)!.envelope))).toBe(true);
    const missing = await rejection(hookline.client.getEvent('evt_nosuch'));
    expect(missing).toBeInstanceOf(HooklineApiError);
    expect(missing).toMatchObject({ status: 404, code: 'event_not_found' });
  });
});

describe('listRejectedEvents(), listRejectedEventsPage()', () => {
  it("walk the project's rejected events newest first page by page, never another project's", async () => {
    const hookline = await startTestHookline();
    const store = hookline.node.engine.store;
    const rejected = (projectId: string, at: number) => ({
      id: newSortableId('rej', at),
      projectId,
      source: `nats:hookline.events.${projectId}#${at}`,
      reason: 'validation_failed',
      message: 'invalid body: body.type: must be one of the three reserved event types',
      details: [{ path: 'body.type', message: 'must be one of the three reserved event types' }],
      receivedAt: at,
      payload: '{"type":"nope"}',
    });
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) {
      const record = rejected('default', Date.now() + n);
      ids.push(record.id);
      await store.putRejectedEvent(record);
    }
    await store.putRejectedEvent(rejected('other', Date.now() + 10));
    const newestFirst = [...ids].reverse();

    const all: string[] = [];
    for await (const event of hookline.client.listRejectedEvents({ limit: 2 })) all.push(event.id);
    expect(all).toEqual(newestFirst);

    const { client, sent } = countingClient(hookline.url, 'test-key');
    for await (const event of client.listRejectedEvents({ limit: 2 })) if (event.id === newestFirst[1]) break;
    expect(sent).toHaveLength(1);
    const first = await client.listRejectedEventsPage({ limit: 2 });
    expect(first.data.map((event) => event.id)).toEqual(newestFirst.slice(0, 2));
    expect(first.data[0]).toMatchObject({ projectId: 'default', reason: 'validation_failed', payload: '{"type":"nope"}', receivedAt: expect.stringMatching(/\+00:00$/) });
    const second = await client.listRejectedEventsPage({ limit: 2, cursor: first.nextCursor! });
    expect(second).toEqual({ data: [expect.objectContaining({ id: newestFirst[2] })], nextCursor: null });
  });
});

describe('getStats()', () => {
  it('answers the count of deliveries in every status', async () => {
    const { hookline, receiver } = await nodeWithDeadLetter();
    receiver.respond = () => ({ status: 204 });
    const ok = await hookline.client.sendEvent({ type: 'service.trigger.event', data: { ok: true } });
    await waitForDeliveryStatus(hookline.client, ok.deliveryId!, 'succeeded');

    expect(await hookline.client.getStats()).toEqual({ counts: { pending: 0, delivering: 0, succeeded: 1, retrying: 0, dead_lettered: 1 } });
  });
});

describe('no answer at all', () => {
  it('connection refused: HooklineApiError network_error, status 0, retryable, the reason in the message', async () => {
    const port = await freePort();
    const client = new HooklineClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k' });
    const error = await rejection(client.getWebhook());
    expect(error).toBeInstanceOf(HooklineApiError);
    expect(isHooklineApiError(error)).toBe(true);
    const apiError = error as HooklineApiError;
    expect(apiError).toMatchObject({ code: 'network_error', status: 0, retryable: true });
    expect(apiError.message).toContain(`GET http://127.0.0.1:${port}/v1/webhook got no answer`);
    expect(apiError.message).toMatch(/ECONNREFUSED/);
    expect(apiError.cause).toBeInstanceOf(Error);
  });

  it('connection reset mid-request: network_error', async () => {
    // A server that accepts, then resets the connection as soon as the request arrives.
    const server: Server = createServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as { port: number };
    const client = new HooklineClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k' });

    const error = await rejection(client.sendEvent({ type: 'service.trigger.event', data: {} }));
    expect(error).toBeInstanceOf(HooklineApiError);
    expect(error).toMatchObject({ code: 'network_error', status: 0 });
  });

  it('an abort is the caller\'s own: it rejects with the abort, not a network_error', async () => {
    // A server that accepts and never answers, so only the abort can end the call.
    const sockets = new Set<Socket>();
    const server: Server = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          for (const socket of sockets) socket.destroy();
        }),
    );
    const { port } = server.address() as { port: number };
    const client = new HooklineClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k' });
    const controller = new AbortController();
    const call = rejection(client.getWebhook({ signal: controller.signal }));
    controller.abort();
    const error = await call;
    expect(isHooklineApiError(error)).toBe(false);
    expect(error).toMatchObject({ name: 'AbortError' });
  });
});

describe('Retry-After', () => {
  it('a 429 from a real node carries the seconds its Retry-After header asks for', async () => {
    const hookline = await startTestHookline({ rateLimit: 1 });
    // One request per second: calls in a row are refused until a second has passed. Sent until one
    // is (a loaded machine may let a second pass between two calls), bounded.
    let error: unknown;
    for (let sent = 0; sent < 20 && error === undefined; sent++) {
      error = await hookline.client.getStats().then(() => undefined, (refusal: unknown) => refusal);
    }
    expect(error).toBeInstanceOf(HooklineApiError);
    expect(error).toMatchObject({ status: 429, code: 'rate_limited', retryable: true });
    expect((error as HooklineApiError).retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });

  it('is null without the header, and read from a date as the seconds until it', () => {
    expect(HooklineApiError.fromResponse(500, '', '{}').retryAfterSeconds).toBeNull();
    expect(HooklineApiError.fromResponse(503, '', '{}', '7').retryAfterSeconds).toBe(7);
    expect(HooklineApiError.fromResponse(503, '', '{}', 'soon').retryAfterSeconds).toBeNull();
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    expect(HooklineApiError.fromResponse(503, '', '{}', inTenSeconds).retryAfterSeconds).toBeGreaterThanOrEqual(9);
    expect(HooklineApiError.fromResponse(503, '', '{}', new Date(0).toUTCString()).retryAfterSeconds).toBe(0);
  });
});
