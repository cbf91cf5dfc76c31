import { randomBytes } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { RetentionPolicy, StorageType, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import fc from 'fast-check';
import { pack, unpackMultiple } from 'msgpackr';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { PartitionChangelog } from '../../src/cluster/changelog.js';
import { ChangelogReader, type PartitionRead } from '../../src/cluster/changelog-read.js';
import type { ChangelogRecord, ChangelogWriter, RestoredChange } from '../../src/cluster/changelog.js';
import type { DeliveryChange, DeliveryRecord, EventRecord } from '../../src/store/records.js';
import { SHARED_NATS_URL, connectNats, deleteStreams } from '../helpers/nats.js';
import { deliveryWithTransitions } from '../helpers/store-fixtures.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { HooklineStore } from '../../src/store/store.js';
import { readPartitionRecords } from '../../src/store/partition-records.js';

/**
 * The partition changelog against the shared JetStream: appends of one turn go out as one message,
 * a restore reads the latest version of every record (from batches and from the one-message-per-record
 * format of earlier versions), a batch from a node that lost the partition is fenced, and a snapshot
 * changes nothing a restore gives but what it reads.
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

/** One step of a delivery: its transition at `transitionIndex`, with an attempt (the first) when asked. */
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

/** The lease check of an append: held throughout. */
const held = () => true;

/** A writer the lease bucket confirms as the partitions' holder. */
const confirmedHolder = (id: string): ChangelogWriter => ({ id, holdsPartition: async () => true });

/**
 * A changelog on a stream of its own, restored for `partition` so that it may append there; by
 * default its writer is the confirmed holder (it appends after another writer's late batch).
 */
async function changelogHolding(partition: number, writer: ChangelogWriter = confirmedHolder(`holder-${partition}`)): Promise<{ changelog: PartitionChangelog; stream: string; prefix: string }> {
  const { stream, prefix } = names();
  const changelog = new PartitionChangelog(nc, stream, prefix, undefined, writer);
  await changelog.ensureStream();
  await changelog.restore(partition, () => {});
  return { changelog, stream, prefix };
}

async function restored(changelog: PartitionChangelog, partition: number): Promise<Map<string, RestoredChange>> {
  const changes = new Map<string, RestoredChange>();
  await changelog.restore(partition, (change) => void changes.set(change.kind === 'webhook' ? `webhook:${change.projectId}` : change.record.id, change));
  return changes;
}

/**
 * Restored records with each event's envelope as base64: vitest compares byte arrays element by
 * element, and 1,200 envelopes of 5 KB took it 20 s.
 */
const comparable = (changes: Map<string, RestoredChange>) =>
  new Map([...changes].map(([key, change]) => [key, change.kind === 'event' ? { ...change, record: { ...change.record, envelope: Buffer.from(change.record.envelope).toString('base64') } } : change]));

/** A takeover's restore: the partition's changelog laid into `store` as it is read. */
async function layInto(store: HooklineStore, changelog: PartitionChangelog, partition: number): Promise<void> {
  const restoring = store.restoring(partition);
  await changelog.restoreInto(partition, (entries) => restoring.apply(entries));
  await restoring.finish();
}

/** What a store holds of project p1, as `projected` shows a restore's records. */
async function restoredIntoStore(changelog: PartitionChangelog, partition: number): Promise<Map<string, unknown>> {
  const dir = makeTempDir('hookline-restore-into-');
  const store = new HooklineStore({ path: dir.path });
  try {
    await layInto(store, changelog, partition);
    const held = new Map<string, unknown>();
    const webhook = store.getWebhook('p1');
    if (webhook) held.set('webhook:p1', webhook);
    for (const { value } of store.events.getRange({ start: ['p1', ''], end: ['p1', '\uffff'] })) held.set(value.id, { deliveryIds: value.deliveryIds });
    for (const { key } of store.deliveries.getRange({ start: ['p1', ''], end: ['p1', '\uffff'] })) held.set(key[1], projectedDelivery(store.getDelivery('p1', key[1])!));
    return held;
  } finally {
    await store.close();
    dir.remove();
  }
}

/**
 * A compaction as a node makes it: from LMDB, here a store the changelog is restored into first (a
 * takeover's, by another instance, so that `changelog` keeps what it saw), read `chunk` records at
 * a time (small: a partition of a few records takes several chunks).
 */
async function compactFromStore(changelog: PartitionChangelog, partition: number, options: { expired?: (record: Pick<DeliveryRecord, 'id' | 'status'>) => boolean; stillHeld?: () => boolean; chunk?: number } = {}) {
  const dir = makeTempDir('hookline-snapshot-from-');
  const store = new HooklineStore({ path: dir.path });
  try {
    await layInto(store, new PartitionChangelog(nc, changelog.stream, changelog.subjectPrefix), partition);
    // The project the directory would have mirrored onto every node.
    await store.projects.put('p1', { id: 'p1', name: 'p1', createdAt: 1 });
    const counts = { leftOut: 0 };
    const records = readPartitionRecords(store, { owns: () => true, leaveOut: options.expired ?? (() => false), chunk: options.chunk ?? 3 }, counts);
    const compaction = await changelog.compact(partition, records, options.stillHeld ?? held);
    return compaction && { ...compaction, leftOut: counts.leftOut };
  } finally {
    await store.close();
    dir.remove();
  }
}

const projectedDelivery = (record: DeliveryRecord) => ({ status: record.status, attempts: record.attempts, updatedAt: record.updatedAt, transitions: record.transitions.length, attemptLog: record.attemptLog.length });

/** A restore's records as compared with a store's: a delivery's state and log lengths, an event's delivery ids. */
function projected(records: Map<string, RestoredChange>): Map<string, unknown> {
  return new Map([...records].map(([key, change]) => [key, change.kind === 'delivery' ? projectedDelivery(change.record) : change.kind === 'event' ? { deliveryIds: change.record.deliveryIds } : change.record]));
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
    // The lease bucket no longer names this writer once the partition has moved.
    const { changelog: old, stream, prefix } = await changelogHolding(1, { id: 'node-old', holdsPartition: async () => false });
    await old.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_x', 2, 'delivering') }, held);

    const owner = new PartitionChangelog(nc, stream, prefix);
    await owner.restore(1, () => {});
    await owner.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_x', 4, 'retrying') }, held);

    // The old owner no longer holds the lease: its late batch is refused, not stored.
    await expect(old.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_x', 3, 'retrying') }, () => false)).rejects.toThrow(/wrong last sequence/);
    expect((await restored(new PartitionChangelog(nc, stream, prefix), 1)).get('dlv_x')!.record).toMatchObject({ status: 'retrying', attempts: 3 });

    // Its clock says it holds the partition still (it is cut off from NATS, say), but the lease
    // bucket does not: refused too, never laid after the new owner's batch (docs/nemesis.md, finding 2).
    await expect(old.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_x', 6, 'succeeded') }, held)).rejects.toThrow(/wrong last sequence/);
    expect((await restored(new PartitionChangelog(nc, stream, prefix), 1)).get('dlv_x')!.record).toMatchObject({ status: 'retrying', attempts: 3 });
  });

  it('fences a holder\'s restore: the previous owner\'s next batch is refused before the holder has appended anything', async () => {
    const { changelog: old, stream, prefix } = await changelogHolding(1, { id: 'node-old', holdsPartition: async () => false });
    await old.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_before', 2, 'delivering') }, held);

    const holder = new PartitionChangelog(nc, stream, prefix, undefined, confirmedHolder('node-new'));
    const read = new Map<string, RestoredChange>();
    await holder.restore(1, (change) => void read.set(change.kind === 'webhook' ? change.projectId : change.record.id, change), { fence: true });
    expect([...read.keys()]).toEqual(['dlv_before']);

    // Its clock says it holds the partition (cut off from NATS, say), and its batch is conditional
    // on its own last one, which was the subject's last until the holder's fence: without the fence
    // it was stored, and the holder, which had read the partition already, never saw it (finding 8).
    await expect(old.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_late', 1, 'pending') }, held)).rejects.toThrow(/wrong last sequence/);
    await holder.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_before', 4, 'succeeded') }, held);
    const records = await restored(new PartitionChangelog(nc, stream, prefix), 1);
    expect([...records.keys()]).toEqual(['dlv_before']);
    expect(records.get('dlv_before')!.record).toMatchObject({ status: 'succeeded' });
    // The fence is a batch a restore skips: the next restore into LMDB gives what the in-memory one does.
    expect([...(await restoredIntoStore(new PartitionChangelog(nc, stream, prefix), 1)).keys()]).toEqual(['dlv_before']);
  });

  it('refuses what waited for a batch when the partition is released, and publishes nothing for it until it is restored again', async () => {
    const { changelog, stream, prefix } = await changelogHolding(5);
    const first = changelog.append(5, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_first', 1, 'pending') }, held);
    // The first batch is on its way; the next append waits for it.
    await nextTurn();
    const waiting = changelog.append(5, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_waiting', 1, 'pending') }, held);
    changelog.forget(5);
    await expect(waiting).rejects.toThrow(/released/);
    await first;
    await expect(changelog.append(5, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_after', 1, 'pending') }, held)).rejects.toThrow(/released/);
    // Before, the waiting batch went out after the release, once without any condition: over
    // whatever the next owner had appended (nemesis, seed 2 for 30 min).
    expect([...(await restored(new PartitionChangelog(nc, stream, prefix), 5)).keys()]).toEqual(['dlv_first']);
    await changelog.restore(5, () => {});
    await changelog.append(5, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_restored', 1, 'pending') }, held);
    expect([...(await restored(new PartitionChangelog(nc, stream, prefix), 5)).keys()].sort()).toEqual(['dlv_first', 'dlv_restored']);
  });

  it('reads on through the sequence the stream\'s leader names, waiting for a batch the serving replica does not have yet', async () => {
    const { changelog: writer, stream, prefix } = await changelogHolding(4);
    await writer.append(4, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_1', 1, 'pending') }, held);
    await writer.append(4, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_2', 1, 'pending') }, held);
    const last = (await manager.streams.getMessage(stream, { last_by_subj: `${prefix}.4.log` }))!.seq;
    const reader = new ChangelogReader(jetstream(nc), async () => manager, stream, prefix, () => 1024 * 1024);
    const state: PartitionRead = { lastBatch: 0, entriesAfterSnapshot: 0, snapshotEntries: 0, marker: null };
    const read: string[] = [];
    // The leader names a batch past what the stream holds for now, as it does while the replica
    // serving the read is behind: the read waits for it rather than end at the replica's last.
    const reading = reader.readBatchesThrough(4, state, last + 1, (change) => void read.push(change.kind === 'webhook' ? change.projectId : change.record.id), nextTurn);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(read).toEqual(['dlv_1', 'dlv_2']);
    await writer.append(4, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_3', 1, 'pending') }, held);
    await reading;
    expect(read).toEqual(['dlv_1', 'dlv_2', 'dlv_3']);
    expect(state.lastBatch).toBe(last + 1);
  });

  it('lays the holder\'s batch after a previous owner\'s late one, when the lease bucket confirms the holder', async () => {
    const { stream, prefix } = names();
    const holder = new PartitionChangelog(nc, stream, prefix, undefined, confirmedHolder('node-new'));
    await holder.ensureStream();
    await holder.restore(1, () => {});
    // A batch of the previous owner's lands after the holder's restore (its publish was delayed).
    const previous = new PartitionChangelog(nc, stream, prefix, undefined, { id: 'node-old', holdsPartition: async () => false });
    await previous.restore(1, () => {});
    await previous.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_late', 1, 'pending') }, held);

    await holder.append(1, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_x', 6, 'succeeded') }, held);
    const records = await restored(new PartitionChangelog(nc, stream, prefix), 1);
    expect(records.get('dlv_x')!.record).toMatchObject({ status: 'succeeded' });
    expect(records.get('dlv_late')!.record).toMatchObject({ status: 'pending' });
  });

});

describe('partition changelog snapshots', () => {
  /** Messages the stream holds for a partition, by the last token of their subject. */
  async function messagesBySubject(stream: string, prefix: string, partition: number): Promise<Record<string, number>> {
    const info = await manager.streams.info(stream, { subjects_filter: `${prefix}.${partition}.>` });
    return Object.fromEntries(Object.entries(info.state.subjects ?? {}).map(([subject, count]) => [subject.slice(subject.lastIndexOf('.') + 1), count]));
  }

  it('restores after any sequence of appends and snapshots what it restores without them (seeded)', async () => {
    const anOp = fc.oneof(
      fc.record({ op: fc.constant('ingest' as const), i: fc.integer({ min: 0, max: 4 }) }),
      // `gap`: a step appended past one whose append failed; steps of a delivery never appended are kept too.
      fc.record({ op: fc.constant('step' as const), i: fc.integer({ min: 0, max: 5 }), done: fc.boolean(), gap: fc.boolean() }),
      // A whole record of any length near the last: steps appended earlier may then follow on from it.
      fc.record({ op: fc.constant('whole' as const), i: fc.integer({ min: 0, max: 5 }), shift: fc.integer({ min: -1, max: 1 }) }),
      fc.record({ op: fc.constant('webhook' as const), version: fc.integer({ min: 0, max: 9 }) }),
      fc.constant({ op: 'snapshot' as const }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(anOp, { minLength: 1, maxLength: 40 }), async (ops) => {
        const compacted = await changelogHolding(0);
        const plain = await changelogHolding(0);
        const transitions = new Map<number, number>();
        // Transitions a delivery holds without a gap, and whether a whole record ever came with fewer.
        const contiguous = new Map<number, number>();
        let shrunk = false;
        // Whether a snapshot was taken while steps of a delivery lay past a gap or had no record: a
        // snapshot holds what LMDB holds, without them. The writer never leaves such steps behind (after
        // a step's failed append, it appends the whole record, every step in it), so a later record
        // they would follow on from never comes; the merge in memory applies them then.
        let stepsDroppedBySnapshot = false;
        for (const op of ops) {
          if (op.op === 'snapshot') {
            stepsDroppedBySnapshot ||= [...transitions].some(([i, at]) => at !== contiguous.get(i));
            await compactFromStore(compacted.changelog, 0);
            continue;
          }
          let changes: ChangelogRecord[];
          if (op.op === 'webhook') {
            changes = [{ kind: 'webhook', projectId: 'p1', record: { version: op.version } as never }];
          } else if (op.op === 'ingest') {
            // A repeated ingest (a replay, or a retry after a 503) lists every delivery made so far.
            const made = (transitions.get(op.i) ?? 0) > 0;
            transitions.set(op.i, made ? transitions.get(op.i)! : 1);
            if (!made) contiguous.set(op.i, 1);
            const record = { ...event(`evt_${op.i}`), deliveryIds: [`dlv_${op.i}`] };
            changes = [{ kind: 'event', projectId: 'p1', record }, ...(made ? [] : [{ kind: 'delivery' as const, projectId: 'p1', record: { ...delivery(`dlv_${op.i}`, 1, 'pending'), eventId: `evt_${op.i}` } }])];
          } else if (op.op === 'step') {
            const at = (transitions.get(op.i) ?? 1) + (op.gap ? 1 : 0);
            transitions.set(op.i, at + 1);
            if (contiguous.get(op.i) === at) contiguous.set(op.i, at + 1);
            changes = [{ kind: 'steps', projectId: 'p1', record: { id: `dlv_${op.i}`, changes: [step(at, op.done ? 'succeeded' : 'delivering', op.done)] } }];
          } else {
            const length = Math.max(1, (transitions.get(op.i) ?? 1) + op.shift);
            transitions.set(op.i, length);
            shrunk ||= length < (contiguous.get(op.i) ?? 0);
            contiguous.set(op.i, Math.max(length, contiguous.get(op.i) ?? 0));
            changes = [{ kind: 'delivery', projectId: 'p1', record: { ...delivery(`dlv_${op.i}`, length, 'retrying'), eventId: `evt_${op.i}` } }];
          }
          await Promise.all([compacted.changelog.appendTogether(0, changes, held), plain.changelog.appendTogether(0, changes, held)]);
        }
        const expected = await restored(new PartitionChangelog(nc, plain.stream, plain.prefix), 0);
        // A snapshot holds a record as LMDB does, which keeps the longer of two versions (see below).
        if (shrunk || stepsDroppedBySnapshot) {
          await deleteStreams(nc, streams);
          streams.clear();
          return;
        }
        expect(await restored(new PartitionChangelog(nc, compacted.stream, compacted.prefix), 0)).toEqual(expected);
        // The node that wrote the snapshots restores the same too.
        expect(await restored(compacted.changelog, 0)).toEqual(expected);
        // As does a restore laid into LMDB as it is read (a takeover's), with and without snapshots,
        // unless a whole record came with fewer transitions than its delivery held (the writer appends
        // a record's current state, so it never does): the merge in memory takes the later version as
        // it is, the store keeps the longer one, as it does over a node's own copy.
        if (!shrunk) expect(await restoredIntoStore(new PartitionChangelog(nc, compacted.stream, compacted.prefix), 0)).toEqual(projected(expected));
        if (!shrunk) expect(await restoredIntoStore(new PartitionChangelog(nc, plain.stream, plain.prefix), 0)).toEqual(projected(expected));
        await deleteStreams(nc, streams);
        streams.clear();
      }),
      {
        seed: 2611,
        numRuns: 60,
        examples: [
          // Snapshots of several chunks, each folding the one before and the steps after it.
          [[{ op: 'ingest', i: 0 }, { op: 'ingest', i: 1 }, { op: 'ingest', i: 2 }, { op: 'step', i: 0, done: false, gap: false }, { op: 'webhook', version: 1 }, { op: 'snapshot' }, { op: 'ingest', i: 3 }, { op: 'step', i: 0, done: true, gap: false }, { op: 'whole', i: 1, shift: 1 }, { op: 'snapshot' }, { op: 'step', i: 2, done: false, gap: false }]],
        ],
      },
    );
    // 60 runs over the shared NATS: 5 s idle, past 30 s measured beside CI's other suites.
  }, 120_000);

  it('streams a snapshot of many chunks and messages from LMDB, restoring the same records; a lost lease abandons it unmarked', async () => {
    const { changelog, stream, prefix } = await changelogHolding(12);
    const payload = 'x'.repeat(5_000);
    // 1,200 events and deliveries, 3 MB: several messages of the server's 1 MB at most, 300 records a chunk.
    for (let from = 0; from < 600; from += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, n) => {
        const i = from + n;
        const record = { ...event(`evt_${i}`), envelope: new TextEncoder().encode(payload), deliveryIds: [`dlv_${i}`] };
        return changelog.appendTogether(12, [{ kind: 'event', projectId: 'p1', record }, { kind: 'delivery', projectId: 'p1', record: { ...delivery(`dlv_${i}`, 1, 'pending'), eventId: `evt_${i}` } }], held);
      }));
    }
    await Promise.all(Array.from({ length: 50 }, (_, i) => changelog.append(12, { kind: 'steps', projectId: 'p1', record: { id: `dlv_${i}`, changes: [step(1, 'succeeded', true)] } }, held)));
    const before = comparable(await restored(new PartitionChangelog(nc, stream, prefix), 12));

    // The lease goes after the second chunk: nothing marked, a restore reads the batches as before.
    let chunksRead = 0;
    const losing = () => chunksRead++ < 2;
    expect(await compactFromStore(changelog, 12, { chunk: 300, stillHeld: losing })).toBeNull();
    const unmarked = await messagesBySubject(stream, prefix, 12);
    expect(unmarked).not.toHaveProperty('snapped');
    expect(comparable(await restored(new PartitionChangelog(nc, stream, prefix), 12))).toEqual(before);

    expect(await compactFromStore(changelog, 12, { chunk: 300 })).toMatchObject({ records: 1_200 });
    expect((await messagesBySubject(stream, prefix, 12)).snap! - (unmarked.snap ?? 0)).toBeGreaterThanOrEqual(3);
    const after = await restored(new PartitionChangelog(nc, stream, prefix), 12);
    expect(comparable(after)).toEqual(before);
    expect(after.get('dlv_7')!.record).toMatchObject({ status: 'succeeded' });
  });

  it('covers no batch another writer stored since the restore: its records, which LMDB lacks, stay readable after the snapshot and its purge', async () => {
    const { changelog, stream, prefix } = await changelogHolding(13);
    await changelog.append(13, { kind: 'event', projectId: 'p1', record: event('evt_own') }, held);
    // What the holder's LMDB holds: the changelog as it was before the late batch.
    const dir = makeTempDir('hookline-snapshot-foreign-');
    const store = new HooklineStore({ path: dir.path });
    onTestFinished(async () => {
      await store.close();
      dir.remove();
    });
    await layInto(store, new PartitionChangelog(nc, stream, prefix), 13);
    await store.projects.put('p1', { id: 'p1', name: 'p1', createdAt: 1 });
    // A previous owner's late batch, stored before the holder's next append (which then wins over it).
    await jetstream(nc).publish(`${prefix}.13.log`, pack(['e', 'p1', event('evt_late')]));
    await changelog.append(13, { kind: 'event', projectId: 'p1', record: event('evt_after') }, held);
    await store.events.put(['p1', 'evt_after'], event('evt_after'));
    const fromStore = () => readPartitionRecords(store, { owns: () => true, leaveOut: () => false, chunk: 2 }, { leftOut: 0 });
    expect(await changelog.compact(13, fromStore(), held)).toMatchObject({ records: 2 });
    expect(await changelog.compact(13, fromStore(), held)).toMatchObject({ records: 2 });
    expect([...(await restored(new PartitionChangelog(nc, stream, prefix), 13)).keys()].sort()).toEqual(['evt_after', 'evt_late', 'evt_own']);
  });

  it('reads the marked snapshot, then the batches after what it covers: a batch stored between its messages wins', async () => {
    const { changelog, stream, prefix } = await changelogHolding(8);
    const js = jetstream(nc);
    const entry = (change: ChangelogRecord) => pack([{ delivery: 'd', event: 'e', webhook: 'w', steps: 's' }[change.kind], change.projectId, change.record]);
    const version = (transitions: number, status: DeliveryRecord['status']): ChangelogRecord => ({ kind: 'delivery', projectId: 'p1', record: delivery('dlv_v', transitions, status) });
    await changelog.append(8, version(1, 'pending'), held);
    await changelog.append(8, { kind: 'event', projectId: 'p1', record: event('evt_folded') }, held);
    const covers = (await manager.streams.getMessage(stream, { last_by_subj: `${prefix}.8.log` }))!.seq;
    // As a compaction writes it while the holder goes on appending: the snapshot's first message,
    // a newer version in a batch, the snapshot's second message with the older version, the marker.
    const from = (await js.publish(`${prefix}.8.snap`, entry({ kind: 'event', projectId: 'p1', record: event('evt_folded') }))).seq;
    await changelog.append(8, version(3, 'succeeded'), held);
    const to = (await js.publish(`${prefix}.8.snap`, entry(version(1, 'pending')))).seq;
    // An unfinished snapshot after it is not read.
    await js.publish(`${prefix}.8.snap`, entry({ kind: 'event', projectId: 'p1', record: event('evt_unmarked') }));
    await js.publish(`${prefix}.8.snapped`, pack({ from, to, covers }));

    const records = await restored(new PartitionChangelog(nc, stream, prefix), 8);
    expect([...records.keys()].sort()).toEqual(['dlv_v', 'evt_folded']);
    expect(records.get('dlv_v')!.record).toMatchObject({ status: 'succeeded' });
  });

  it('leaves out deliveries past retention with their steps, and purges what a snapshot replaced one snapshot later', async () => {
    const { changelog, stream, prefix } = await changelogHolding(9);
    const expired = (record: Pick<DeliveryRecord, 'id' | 'status'>) => record.status === 'succeeded' && record.id < 'dlv_m';
    await changelog.append(9, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_a_old_done', 1, 'pending') }, held);
    await changelog.append(9, { kind: 'steps', projectId: 'p1', record: { id: 'dlv_a_old_done', changes: [step(1, 'succeeded', true)] } }, held);
    await changelog.append(9, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_b_old_live', 1, 'pending') }, held);
    await changelog.append(9, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_z_new_done', 2, 'succeeded') }, held);
    await changelog.append(9, { kind: 'event', projectId: 'p1', record: event('evt_kept') }, held);

    expect(await compactFromStore(changelog, 9, { expired })).toMatchObject({ records: 3, leftOut: 1, purged: 0 });
    const afterFirst = await restored(new PartitionChangelog(nc, stream, prefix), 9);
    expect([...afterFirst.keys()].sort()).toEqual(['dlv_b_old_live', 'dlv_z_new_done', 'evt_kept']);
    // Nothing purged yet: a restore that read no marker, or this one, still finds all it reads.
    expect(await messagesBySubject(stream, prefix, 9)).toEqual({ log: 5, snap: 1, snapped: 1 });

    await changelog.append(9, { kind: 'delivery', projectId: 'p1', record: delivery('dlv_b_old_live', 3, 'retrying') }, held);
    expect(await compactFromStore(changelog, 9, { expired })).toMatchObject({ records: 3, leftOut: 0, purged: 5 });
    // Left: the first snapshot and its marker, the batch after it, the second snapshot and its marker.
    expect(await messagesBySubject(stream, prefix, 9)).toEqual({ log: 1, snap: 2, snapped: 2 });
    const afterSecond = await restored(new PartitionChangelog(nc, stream, prefix), 9);
    expect([...afterSecond.keys()].sort()).toEqual(['dlv_b_old_live', 'dlv_z_new_done', 'evt_kept']);
    expect(afterSecond.get('dlv_b_old_live')!.record).toMatchObject({ status: 'retrying' });

    // Appends go on after the purge, and a restore finds them.
    await changelog.append(9, { kind: 'event', projectId: 'p1', record: event('evt_after') }, held);
    expect((await restored(new PartitionChangelog(nc, stream, prefix), 9)).has('evt_after')).toBe(true);
  });

  it('writes no marker for a node whose lease went, nor over a marker another node wrote since it read', async () => {
    const { changelog: old, stream, prefix } = await changelogHolding(10);
    await old.append(10, { kind: 'event', projectId: 'p1', record: event('evt_1') }, held);
    expect(await compactFromStore(old, 10, { stillHeld: () => false })).toBeNull();

    const owner = new PartitionChangelog(nc, stream, prefix);
    await owner.restore(10, () => {});
    await owner.append(10, { kind: 'event', projectId: 'p1', record: event('evt_2') }, held);
    expect(await compactFromStore(owner, 10)).toMatchObject({ records: 2 });
    // The old node, unaware, believes it still holds the partition: it finds a marker it never saw.
    expect(await compactFromStore(old, 10)).toBeNull();
    expect(await messagesBySubject(stream, prefix, 10)).toEqual({ log: 2, snap: 1, snapped: 1 });
    expect([...(await restored(new PartitionChangelog(nc, stream, prefix), 10)).keys()].sort()).toEqual(['evt_1', 'evt_2']);
  });

  it('is due once the batches since the snapshot hold as many entries as it has records, and at least the minimum', async () => {
    const { stream, prefix } = names();
    const changelog = new PartitionChangelog(nc, stream, prefix, 4);
    await changelog.ensureStream();
    expect(changelog.snapshotDue(11)).toBe(false);
    await changelog.restore(11, () => {});
    for (let i = 0; i < 3; i++) await changelog.append(11, { kind: 'event', projectId: 'p1', record: event(`evt_${i}`) }, held);
    expect(changelog.snapshotDue(11)).toBe(false);
    await Promise.all([4, 5, 6, 7, 8].map((i) => changelog.append(11, { kind: 'event', projectId: 'p1', record: event(`evt_${i}`) }, held)));
    expect(changelog.snapshotDue(11)).toBe(true);
    await compactFromStore(changelog, 11);
    expect(changelog.snapshotDue(11)).toBe(false);
    // 8 records in the snapshot: due again after 8 more entries, not after the minimum of 4.
    for (let i = 10; i < 15; i++) await changelog.append(11, { kind: 'event', projectId: 'p1', record: event(`evt_${i}`) }, held);
    expect(changelog.snapshotDue(11)).toBe(false);
    // A restore elsewhere counts the entries after the snapshot the same way.
    const other = new PartitionChangelog(nc, stream, prefix, 4);
    await other.restore(11, () => {});
    expect(other.snapshotDue(11)).toBe(false);
    await Promise.all([15, 16, 17].map((i) => other.append(11, { kind: 'event', projectId: 'p1', record: event(`evt_${i}`) }, held)));
    expect(other.snapshotDue(11)).toBe(true);
  });
});
