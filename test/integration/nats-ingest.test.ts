import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { isHooklineApiError } from '../../src/sdk/errors.js';
import { publishEvent } from '../../src/sdk/nats.js';
import { ADMIN_KEY, allDeliveries, configureReceiver } from '../helpers/hookline.js';
import { waitForConsumerDrained } from '../helpers/nats.js';
import { useNatsHooklines } from '../helpers/nats-hooklines.js';
import { startReceiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait-for.js';

/** The NATS inbound transport against the shared JetStream server; each test its own stream. */

const nats = useNatsHooklines();
const natsHookline = (overrides?: Parameters<typeof nats.start>[0]) => nats.start(overrides);
let manager: JetStreamManager;
let nc: NatsConnection;

beforeAll(async () => {
  nc = nats.connection();
  manager = await jetstreamManager(nc);
});

describe('NATS JetStream inbound transport', () => {
  it('creates the stream (file storage, duplicate window) and a durable pull consumer with explicit ack', async () => {
    const { names } = await natsHookline();
    const stream = await manager.streams.info(names.natsStream);
    expect(stream.config.subjects).toEqual([`${names.natsSubjectPrefix}.>`]);
    expect(stream.config.storage).toBe('file');
    expect(stream.config.duplicate_window).toBeGreaterThan(0);
    const consumer = await manager.consumers.info(names.natsStream, names.natsDurable);
    expect(consumer.config.durable_name).toBe(names.natsDurable);
    expect(consumer.config.ack_policy).toBe('explicit');
    expect(consumer.config.deliver_subject).toBeUndefined();
    expect(consumer.config.max_ack_pending).toBeGreaterThan(0);
  });

  it('delivers each of N published events exactly once, signed, and the consumer acks them all', async () => {
    const { hookline, names } = await natsHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);

    const n = 200;
    const published = await Promise.all(
      Array.from({ length: n }, (_, i) => publishEvent(nc, 'default', { id: `evt_once_${i}`, type: 'service.trigger.event', data: { i } }, { subjectPrefix: names.natsSubjectPrefix })),
    );
    expect(published.every((result) => !result.duplicate)).toBe(true);
    const ids = new Set(published.map((result) => result.id));

    await waitFor(() => new Set(receiver.received.map((delivery) => delivery.envelope.id)).size === n, { timeoutMs: 10_000, message: `${n} deliveries` });
    const consumer = await waitForConsumerDrained(manager, names);

    expect(receiver.received).toHaveLength(n);
    expect(new Set(receiver.received.map((delivery) => delivery.envelope.id))).toEqual(ids);
    expect(receiver.received.every((delivery) => delivery.verified)).toBe(true);
    expect(receiver.received.find((delivery) => delivery.envelope.id === 'evt_once_7')?.envelope.data).toEqual({ i: 7 });
    expect(consumer.num_ack_pending).toBe(0);
    expect(consumer.num_pending).toBe(0);
    expect(consumer.delivered.stream_seq).toBe(n);
    expect(consumer.ack_floor.stream_seq).toBe(n);
    const deliveries = await allDeliveries(hookline.client);
    expect(deliveries).toHaveLength(n);
    expect(deliveries.every((delivery) => delivery.status === 'succeeded')).toBe(true);
  });

  it('yields one delivery when the same Nats-Msg-Id is published twice (and when a body id repeats without the header)', async () => {
    const { hookline, names } = await natsHookline();
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const event = { id: 'evt_twice', type: 'service.trigger.event' as const, data: { hello: 'world' } };

    const first = await publishEvent(nc, 'default', event, { subjectPrefix: names.natsSubjectPrefix });
    const second = await publishEvent(nc, 'default', event, { subjectPrefix: names.natsSubjectPrefix });
    expect(first.duplicate).toBe(false);
    expect(second).toEqual({ id: 'evt_twice', seq: first.seq, duplicate: true });

    // Past JetStream's window (simulated: no Nats-Msg-Id), the event id in the body still de-duplicates.
    const js = jetstream(nc);
    const raw = await js.publish(`${names.natsSubjectPrefix}.default`, JSON.stringify(event));
    expect(raw.duplicate).toBe(false);
    // A marker published last: once it is delivered, both copies of evt_twice have been consumed.
    await publishEvent(nc, 'default', { id: 'evt_marker', type: 'service.trigger.event', data: {} }, { subjectPrefix: names.natsSubjectPrefix });

    await waitFor(() => receiver.received.some((delivery) => delivery.envelope.id === 'evt_marker'), { message: 'the marker delivery' });
    await waitForConsumerDrained(manager, names);
    expect(receiver.received.filter((delivery) => delivery.envelope.id === 'evt_twice')).toHaveLength(1);
    expect((await allDeliveries(hookline.client)).filter((delivery) => delivery.eventId === 'evt_twice')).toHaveLength(1);
    expect((await hookline.api('GET', '/v1/logs/rejected-events')).body.data).toEqual([]);
  });

  it('publishEvent rejects another body under an id JetStream just dropped as a duplicate: event_id_conflict, as HTTP answers 409', async () => {
    const { names } = await natsHookline();
    const options = { subjectPrefix: names.natsSubjectPrefix };
    await publishEvent(nc, 'default', { id: 'evt_reused', type: 'service.trigger.event', data: { n: 1 } }, options);
    const conflict = await publishEvent(nc, 'default', { id: 'evt_reused', type: 'service.trigger.event', data: { n: 2 } }, options).catch((error: unknown) => error);
    expect(isHooklineApiError(conflict)).toBe(true);
    expect(conflict).toMatchObject({ code: 'event_id_conflict', status: 409, message: expect.stringContaining('event evt_reused was already published with a different body') });
    expect(await publishEvent(nc, 'default', { id: 'evt_reused', type: 'service.trigger.event', data: { n: 1 } }, options)).toMatchObject({ id: 'evt_reused', seq: 1, duplicate: true });
  });

  it('publishEvent refuses a project id that is not a single subject token', async () => {
    for (const projectId of ['', 'a.b', '*', '>', 'has space']) {
      await expect(publishEvent(nc, projectId, { type: 'service.trigger.event', data: {} })).rejects.toThrow(/project id/);
    }
  });

  it('terminates and lists malformed JSON, a missing type, an unknown type and an unknown project, and keeps consuming', async () => {
    const { hookline, names } = await natsHookline({ adminKey: ADMIN_KEY });
    const receiver = await startReceiver();
    await configureReceiver(hookline, receiver);
    const js = jetstream(nc);
    const subject = `${names.natsSubjectPrefix}.default`;
    const withId = (id: string) => ({ msgID: id });

    await js.publish(subject, '{"type": "service.trigger.event", "data": ', withId('evt_bad_json'));
    await publishEvent(nc, 'prj_nobody', { id: 'evt_no_project', type: 'service.trigger.event', data: {} }, { subjectPrefix: names.natsSubjectPrefix });
    await js.publish(subject, JSON.stringify({ data: { a: 1 } }), withId('evt_no_type'));
    await js.publish(subject, JSON.stringify({ type: 'service.nope', data: {} }), withId('evt_bad_type'));
    await publishEvent(nc, 'default', { id: 'evt_fine', type: 'service.trigger.event', data: { ok: true } }, { subjectPrefix: names.natsSubjectPrefix });

    await waitFor(() => receiver.received.some((delivery) => delivery.envelope.id === 'evt_fine'), { message: 'the valid event after the bad ones' });
    const consumer = await waitForConsumerDrained(manager, names);
    expect(consumer.delivered.stream_seq).toBe(5);
    expect(receiver.received.map((delivery) => delivery.envelope.id)).toEqual(['evt_fine']);

    const own = await hookline.api('GET', '/v1/logs/rejected-events');
    expect(own.status).toBe(200);
    const bySource = (data: Array<{ source: string }>, seq: number) => data.find((entry) => entry.source === `nats:${subject}#${seq}`);
    expect(own.body.data).toHaveLength(3);
    expect(own.body.nextCursor).toBeNull();
    expect(bySource(own.body.data, 1)).toMatchObject({ projectId: 'default', reason: 'invalid_json', payload: '{"type": "service.trigger.event", "data": ' });
    expect(bySource(own.body.data, 3)).toMatchObject({ projectId: 'default', reason: 'validation_failed', details: [expect.objectContaining({ path: 'type' })] });
    expect(bySource(own.body.data, 4)).toMatchObject({ projectId: 'default', reason: 'validation_failed', details: [expect.objectContaining({ path: 'type' })] });
    for (const entry of own.body.data) expect(entry.receivedAt).toMatch(/\+00:00$/);

    // The unknown project has no key, so its rejection is in the admin log only.
    const admin = await hookline.api('GET', '/admin/v1/rejected-events', { key: ADMIN_KEY });
    expect(admin.status).toBe(200);
    expect(admin.body.data).toHaveLength(4);
    expect(admin.body.data.find((entry: { projectId: string }) => entry.projectId === 'prj_nobody')).toMatchObject({
      reason: 'unknown_project',
      source: `nats:${names.natsSubjectPrefix}.prj_nobody#2`,
    });
    expect((await hookline.api('GET', '/admin/v1/rejected-events', { key: 'test-key' })).status).toBe(401);

    // Newest first across projects, and page by page (limit 1) each record exactly once.
    const adminIds = admin.body.data.map((entry: { id: string }) => entry.id);
    expect(adminIds).toEqual([...adminIds].sort().reverse());
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await hookline.api('GET', `/admin/v1/rejected-events?limit=1${cursor ? `&cursor=${cursor}` : ''}`, { key: ADMIN_KEY });
      expect(page.status).toBe(200);
      paged.push(...page.body.data.map((entry: { id: string }) => entry.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(paged).toEqual(adminIds);
  });
});
