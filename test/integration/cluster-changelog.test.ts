import { randomBytes } from 'node:crypto';
import { RetentionPolicy, StorageType, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { pack, unpackMultiple } from 'msgpackr';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PartitionChangelog } from '../../src/cluster/changelog.js';
import type { ChangelogRecord } from '../../src/cluster/changelog.js';
import type { DeliveryChange, DeliveryRecord, EventRecord } from '../../src/store/records.js';
import { SHARED_NATS_URL, connectNats, deleteStreams } from '../helpers/nats.js';
import { deliveryWithTransitions } from '../helpers/store-fixtures.js';

/**
 * The partition changelog against the shared JetStream: appends of one turn go out as one message,
 * a restore reads the latest version of every record (from batches and from the one-message-per-record
 * format of earlier versions), and a batch from a node that lost the partition is fenced.
 */

let nc: NatsConnection;
let manager: JetStreamManager;
const streams = new Set<string>();

beforeAll(async () => {
  nc = await connectNats(SHARED_NATS_URL);
  manager = await jetstreamManager(nc);
});

afterEach(async () => {
  await deleteStreams(nc, streams);
  streams.clear();
});

afterAll(async () => {
  await nc?.close();
});

function names(): { stream: string; prefix: string } {
  const suffix = randomBytes(5).toString('hex');
  const stream = `HL_CHANGELOG_${suffix}`;
  streams.add(stream);
  return { stream, prefix: `hlchangelog.${suffix}` };
}

const delivery = (id: string, transitions: number, status: DeliveryRecord['status']) => deliveryWithTransitions(id, transitions, status, transitions - 1);

const event = (id: string): EventRecord => ({
  id,
  type: 'service.trigger.event',
  fingerprint: 'f',
  envelope: new TextEncoder().encode(`{"id":"${id}"}`),
  createdAt: 1,
  answer: { id, deliveryId: null },
  deliveryIds: [],
});

/** The lease check of an append: held throughout. */
const held = () => true;

/** A changelog on a stream of its own, restored for `partition` so that it may append there. */
async function changelogHolding(partition: number): Promise<{ changelog: PartitionChangelog; stream: string; prefix: string }> {
  const { stream, prefix } = names();
  const changelog = new PartitionChangelog(nc, stream, prefix);
  await changelog.ensureStream();
  await changelog.restore(partition, () => {});
  return { changelog, stream, prefix };
}

async function restored(changelog: PartitionChangelog, partition: number): Promise<Map<string, ChangelogRecord>> {
  const changes = new Map<string, ChangelogRecord>();
  await changelog.restore(partition, (change) => void changes.set(change.kind === 'webhook' ? `webhook:${change.projectId}` : change.record.id, change));
  return changes;
}

describe('partition changelog', () => {
  it('stores the appends of one turn as one message per partition, each resolving once it is stored', async () => {
    const { changelog, stream, prefix } = await changelogHolding(3);
    await Promise.all([
      ...Array.from({ length: 50 }, (_, i) => changelog.append(3, { kind: 'event', projectId: 'p1', record: event(`evt_${i}`) }, held)),
      changelog.append(3, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_a', 1, 'pending') }, held),
      changelog.append(3, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_a', 3, 'succeeded') }, held),
      changelog.append(4, { kind: 'delivery', projectId: 'p2', record: delivery('dlv_b', 1, 'pending') }, held),
    ]);
    const info = await manager.streams.info(stream, { subjects_filter: `${prefix}.>` });
    expect(info.state.messages).toBe(2);
    expect(info.state.subjects).toEqual({ [`${prefix}.3.log`]: 1, [`${prefix}.4.log`]: 1 });

    // A later version in a later batch wins over the one before it.
    await changelog.append(3, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_a', 5, 'dead_lettered') }, held);
    const other = new PartitionChangelog(nc, stream, prefix);
    const partition3 = await restored(other, 3);
    expect(partition3.size).toBe(51);
    expect(partition3.get('dlv_a')!.record).toMatchObject({ status: 'dead_lettered' });
    expect([...(await restored(other, 4)).keys()]).toEqual(['dlv_b']);
  });

  it('restores a delivery from its record and its steps in transition order, a re-sent step once, and stops at a gap', async () => {
    const { changelog, stream, prefix } = await changelogHolding(2);
    const step = (transitionIndex: number, status: DeliveryRecord['status'], attempt?: boolean): DeliveryChange => ({
      status,
      attempts: attempt ? 1 : 0,
      roundAttempts: attempt ? 1 : 0,
      roundSize: 5,
      nextAttemptAt: null,
      updatedAt: 10 + transitionIndex,
      transitions: [{ from: 'pending', to: status, event: 'START_ATTEMPT', at: 10 + transitionIndex }],
      transitionIndex,
      attemptIndex: 0,
      ...(attempt ? { attempt: { attempt: 1, at: 11, statusCode: 204, durationMs: 1, error: null, errorCode: null, responseBody: '' } } : {}),
    });
    await changelog.append(2, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_s', 1, 'pending') }, held);
    await changelog.append(2, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_gap', 1, 'pending') }, held);
    // A step appended on its own, then again with the next one (steps written again after a failed commit).
    await changelog.append(2, { kind: 'steps', projectId: 'p1', record: { id: 'dlv_s', changes: [step(1, 'delivering')] } }, held);
    await changelog.append(2, { kind: 'steps', projectId: 'p1', record: { id: 'dlv_s', changes: [step(1, 'delivering'), step(2, 'succeeded', true)] } }, held);
    await changelog.append(2, { kind: 'steps', projectId: 'p1', record: { id: 'dlv_gap', changes: [step(1, 'delivering')] } }, held);
    await changelog.append(2, { kind: 'steps', projectId: 'p1', record: { id: 'dlv_gap', changes: [step(3, 'succeeded', true)] } }, held);

    const records = await restored(new PartitionChangelog(nc, stream, prefix), 2);
    expect([...records.keys()].sort()).toEqual(['dlv_gap', 'dlv_s']);
    const done = records.get('dlv_s')!.record as DeliveryRecord;
    expect(done).toMatchObject({ status: 'succeeded', attempts: 1, updatedAt: 12 });
    expect(done.transitions.map((t) => t.to)).toEqual(['pending', 'delivering', 'succeeded']);
    expect(done.attemptLog).toHaveLength(1);
    const gap = records.get('dlv_gap')!.record as DeliveryRecord;
    expect(gap.status).toBe('delivering');
    expect(gap.transitions).toHaveLength(2);
  });

  it('stores records appended together in one message, even where the turn\'s appends fill several', async () => {
    const { changelog, stream } = await changelogHolding(5);
    // Pairs of a large event and its small delivery, sized so that the first message's limit falls
    // between an event and its delivery: appended one record at a time, that pair would be split.
    const limit = (nc.info?.max_payload ?? 1024 * 1024) - 4096;
    const pairs = 20;
    const deliveryOf = (i: number) => deliveryWithTransitions(`dlv_${String(i).padStart(3, '0')}`, 1, 'pending');
    const deliveryBytes = pack(['d', 'p1', deliveryOf(0)]).length;
    const pairBytes = Math.floor((limit + deliveryBytes) / pairs); // pairs × pairBytes > limit ≥ that less one delivery
    const eventOf = (i: number, padding: number): EventRecord => ({ ...event(`evt_${String(i).padStart(3, '0')}`), envelope: new Uint8Array(padding) });
    const eventBytes = (padding: number) => pack(['e', 'p1', eventOf(0, padding)]).length;
    const roughly = pairBytes - deliveryBytes - eventBytes(0);
    const padding = roughly - (eventBytes(roughly) - (pairBytes - deliveryBytes)); // the envelope's header grows with it
    expect(pack(['e', 'p1', eventOf(0, padding)]).length + deliveryBytes).toBe(pairBytes);
    expect(pairs * pairBytes - deliveryBytes).toBeLessThanOrEqual(limit);
    expect(pairs * pairBytes).toBeGreaterThan(limit);

    await Promise.all(
      Array.from({ length: pairs + 5 }, (_, i) =>
        changelog.appendTogether(5, [{ kind: 'event', projectId: 'p1', record: eventOf(i, padding) }, { kind: 'delivery', projectId: 'p1', record: deliveryOf(i) }], held),
      ),
    );
    const { state } = await manager.streams.info(stream);
    expect(state.messages).toBeGreaterThanOrEqual(2);
    const ids: string[][] = [];
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const message = await manager.streams.getMessage(stream, { seq });
      ids.push((unpackMultiple(message!.data) as Array<[string, string, { id: string }]>).map(([, , record]) => record.id.slice(4)));
    }
    expect(ids.flat()).toHaveLength(2 * (pairs + 5));
    // Each message holds whole pairs: every event's delivery beside it.
    for (const message of ids) {
      expect(message.length % 2).toBe(0);
      for (let i = 0; i < message.length; i += 2) expect(message[i + 1]).toBe(message[i]);
    }
    expect(ids[0]).toHaveLength(2 * (pairs - 1));
  });

  it('restores no delivery that its event does not list: the leftover of an ingest taken back after its append timed out', async () => {
    const { changelog, stream, prefix } = await changelogHolding(6);
    const eventWith = (id: string, deliveryIds: string[]): EventRecord => ({ ...event(id), answer: { id, deliveryId: deliveryIds[0]! }, deliveryIds });
    const deliveryFor = (id: string, eventId: string): DeliveryRecord => ({ ...delivery(id, 1, 'pending'), eventId });
    const ingest = (record: EventRecord, made: DeliveryRecord) =>
      changelog.appendTogether(6, [{ kind: 'event', projectId: 'p1', record }, { kind: 'delivery', projectId: 'p1', record: made }], held);
    // Stored, though the node heard only timeouts, took the event back and answered 503 ...
    await ingest(eventWith('evt_retried', ['dlv_first']), deliveryFor('dlv_first', 'evt_retried'));
    // ... so the sender's retry made it anew; then it was replayed.
    await ingest(eventWith('evt_retried', ['dlv_retry']), deliveryFor('dlv_retry', 'evt_retried'));
    await ingest(eventWith('evt_retried', ['dlv_retry', 'dlv_replay']), deliveryFor('dlv_replay', 'evt_retried'));
    // A delivery whose event the changelog does not hold is kept.
    await changelog.append(6, { kind: 'delivery', projectId: 'p1', record: deliveryFor('dlv_alone', 'evt_elsewhere') }, held);

    const records = await restored(new PartitionChangelog(nc, stream, prefix), 6);
    expect([...records.keys()].sort()).toEqual(['dlv_alone', 'dlv_replay', 'dlv_retry', 'evt_retried']);
  });

  it('restores records of the one-message-per-record format and widens that stream to keep every batch', async () => {
    const { stream, prefix } = names();
    await manager.streams.add({ name: stream, subjects: [`${prefix}.>`], storage: StorageType.File, retention: RetentionPolicy.Limits, max_msgs_per_subject: 1 });
    const js = jetstream(nc);
    await js.publish(`${prefix}.7.e.p1.evt_old`, pack(event('evt_old')));
    await js.publish(`${prefix}.7.d.p1.dlv_old`, pack(delivery('dlv_old', 2, 'retrying')));

    const changelog = new PartitionChangelog(nc, stream, prefix);
    await changelog.ensureStream();
    expect((await manager.streams.info(stream)).config.max_msgs_per_subject).toBe(-1);
    const before = await restored(changelog, 7);
    expect([...before.keys()].sort()).toEqual(['dlv_old', 'evt_old']);

    await changelog.append(7, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_old', 4, 'succeeded') }, held);
    await changelog.append(7, { kind: 'event', projectId: 'p1', record: event('evt_new') }, held);
    const after = await restored(new PartitionChangelog(nc, stream, prefix), 7);
    expect([...after.keys()].sort()).toEqual(['dlv_old', 'evt_new', 'evt_old']);
    expect(after.get('dlv_old')!.record).toMatchObject({ status: 'succeeded' });
  });

  it('refuses a batch from a node that lost the partition once the new owner has appended; the holder\'s batch wins', async () => {
    const { changelog: old, stream, prefix } = await changelogHolding(1);
    await old.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_x', 2, 'delivering') }, held);

    const owner = new PartitionChangelog(nc, stream, prefix);
    await owner.restore(1, () => {});
    await owner.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_x', 4, 'retrying') }, held);

    // The old owner no longer holds the lease: its late batch is refused, not stored.
    await expect(old.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_x', 3, 'retrying') }, () => false)).rejects.toThrow(/wrong last sequence/);
    expect((await restored(new PartitionChangelog(nc, stream, prefix), 1)).get('dlv_x')!.record).toMatchObject({ status: 'retrying', attempts: 3 });

    // A holder whose view is stale (its ack was lost, say) appends again over the current last sequence.
    await old.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_x', 6, 'succeeded') }, held);
    expect((await restored(new PartitionChangelog(nc, stream, prefix), 1)).get('dlv_x')!.record).toMatchObject({ status: 'succeeded' });
  });
});
