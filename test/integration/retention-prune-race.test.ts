import { afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { Engine } from '../../src/actors/engine.js';
import { defaultSettings, type Settings } from '../../src/config/settings.js';
import { HooklineClient } from '../../src/sdk/index.js';
import { withChanges } from '../../src/store/delivery-model.js';
import type { DeliveryChange } from '../../src/store/records.js';
import type { HooklineStore } from '../../src/store/store.js';
import { ensureBuilt } from '../helpers/child-node.js';
import { clusterStreams, uniqueClusterNames } from '../helpers/cluster.js';
import { ALL_TYPES, allDeliveries, startTestHookline } from '../helpers/hookline.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { SHARED_NATS_URL, connectNats, deleteStreams } from '../helpers/nats.js';
import { deliveryWithTransitions, openTempStore } from '../helpers/store-fixtures.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { waitFor } from '../helpers/wait-for.js';

/**
 * Retention pruning against the recovery operations. A prune finds the terminal deliveries past
 * retention on the status index, then deletes them in a later LMDB transaction; a retry or redrive
 * of one of them in between must leave either the whole delivery (its history and its new round)
 * or none of it, never a delivery deleted while live (order a) nor one brought back without its
 * history (order b). And past retention, before any prune: a terminal delivery is gone for the
 * recovery operations at once, as a prune (or a changelog snapshot, which leaves it out) makes it.
 * On a single node and on a cluster node (which prunes the projects it owns).
 */

const DAY = 24 * 3600_000;
const PROJECT = 'default';
const API_KEY = 'test-key';
/** Settings of both kinds of node: one attempt per round, a retention of one day. */
const RACE_SETTINGS = { retrySchedule: [0], retentionMs: DAY } satisfies Partial<Settings>;

interface RaceNode {
  engine: Engine;
  client: HooklineClient;
}

interface Setup extends RaceNode {
  clock: ManualClock;
  receiver: Receiver;
  deliveryId: string;
}

/** A node whose webhook goes to a receiver answering `respond`. */
async function nodeWithReceiver(start: (clock: ManualClock) => Promise<RaceNode>, respond: (index: number) => number, clock = new ManualClock()): Promise<Omit<Setup, 'deliveryId'>> {
  const receiver = await startReceiver({ respond: (_, index) => ({ status: respond(index) }) });
  const { engine, client } = await start(clock);
  await client.configureWebhook({ callbackUrl: receiver.url, status: 'active', eventTypes: ALL_TYPES });
  receiver.secret = (await client.getSecret()).secret;
  return { clock, engine, client, receiver };
}

/** A new event's delivery, once its one failed attempt has dead-lettered it (stored, out of memory). */
async function sendToDeadLetter({ engine, client }: RaceNode): Promise<string> {
  const { deliveryId } = await client.sendEvent({ type: 'service.trigger.event', data: { n: 1 } });
  await waitFor(() => engine.store.getDeliveryHead(PROJECT, deliveryId!)?.status === 'dead_lettered' && !engine.actorFor(PROJECT).holds(deliveryId!), { message: 'the dead-lettering stored' });
  return deliveryId!;
}

/** One dead letter, as old as the retention: the last moment it may still be retried or redriven. */
async function deadLetterAtRetention(start: (clock: ManualClock) => Promise<RaceNode>): Promise<Setup> {
  // The first attempt fails; the new round's attempt succeeds.
  const node = await nodeWithReceiver(start, (index) => (index === 0 ? 500 : 204));
  const deliveryId = await sendToDeadLetter(node);
  node.clock.advance(DAY);
  return { ...node, deliveryId };
}

/** One dead letter, two days older than the retention. */
async function deadLetterPastRetention(start: (clock: ManualClock) => Promise<RaceNode>): Promise<Setup> {
  const setup = await deadLetterAtRetention(start);
  setup.clock.advance(DAY);
  return setup;
}

/** A single node (the test helpers' settings). */
async function singleNode(clock: ManualClock): Promise<RaceNode> {
  const hookline = await startTestHookline(RACE_SETTINGS, { clock });
  return { engine: hookline.node.engine, client: hookline.client };
}

/**
 * Runs `recovery` when the prune started just before has made its deletions in LMDB's write
 * transaction and reads still see the last commit, where the delivery is dead-lettered: order (b).
 * A transaction queued behind the prune's runs right after its callback, in the same write
 * transaction; it pins the snapshot reads see (the last commit) and hands on to a microtask, which
 * runs once the transaction's callbacks have returned, so the recovery's writes go to the next one.
 */
function inPruneCommitWindow<T>(store: HooklineStore, recovery: () => Promise<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    void store.root.transaction(() => {
      const lastCommit = store.root.useReadTransaction();
      queueMicrotask(() => {
        try {
          recovery().then(resolve, reject);
        } finally {
          lastCommit.done();
        }
      });
    });
  });
}

/** The delivery whole: its first round (attempt 1 failed, dead-lettered) and the new one (attempt 2 succeeded). */
async function expectWholeAfterNewRound({ client, receiver, deliveryId }: Setup, recoveryEvent: 'RETRY' | 'REDRIVE'): Promise<void> {
  await waitFor(() => receiver.byWebhookId(deliveryId).length === 2, { message: 'the new round attempted' });
  const detail = await waitFor(
    async () => {
      const delivery = await client.getDelivery(deliveryId);
      return delivery.status === 'succeeded' ? delivery : null;
    },
    { message: 'the new round stored' },
  );
  expect(detail.attempts).toBe(2);
  expect(detail.attemptLog.map((attempt) => [attempt.attempt, attempt.statusCode])).toEqual([
    [1, 500],
    [2, 204],
  ]);
  expect(detail.transitions.map((transition) => `${transition.event}>${transition.to}`)).toEqual([
    'CREATED>pending',
    'START_ATTEMPT>delivering',
    'ATTEMPT_FAILED>failed',
    'ATTEMPT_FAILED>dead_lettered',
    `${recoveryEvent}>pending`,
    'START_ATTEMPT>delivering',
    'ATTEMPT_SUCCEEDED>succeeded',
  ]);
  expect((await allDeliveries(client)).map((delivery) => [delivery.id, delivery.status])).toEqual([[deliveryId, 'succeeded']]);
}

/** The delivery gone whole, and nothing of it live: not in memory, not on the status index. */
async function expectPruned({ client, engine, deliveryId }: Setup): Promise<void> {
  await expect(client.getDelivery(deliveryId)).rejects.toMatchObject({ status: 404, code: 'delivery_not_found' });
  expect(await allDeliveries(client)).toEqual([]);
  expect(engine.actorFor(PROJECT).holds(deliveryId)).toBe(false);
  expect(engine.countDeliveriesByStatus(PROJECT)).toEqual({ pending: 0, delivering: 0, succeeded: 0, retrying: 0, dead_lettered: 0 });
}

function raceTests(start: (clock: ManualClock) => Promise<RaceNode>): void {
  it('(a) a redrive made before the prune runs: the redriven delivery is not pruned, and keeps its history', async () => {
    const setup = await deadLetterAtRetention(start);
    const { engine, clock } = setup;
    // Same turn: the redrive within retention, then the prune past it, which finds the delivery
    // dead-lettered on the index (the redrive's commit has not landed) and whose transaction runs
    // after the redrive's writes.
    const redriven = engine.actorFor(PROJECT).recovery.redrive({});
    clock.advance(DAY);
    const pruned = engine.pruneExpired();
    expect(await redriven).toBe(1);
    expect(await pruned).toBe(0);
    await expectWholeAfterNewRound(setup, 'REDRIVE');
  });

  it('(a) a retry made before the prune runs: the retried delivery is not pruned, and keeps its history', async () => {
    const setup = await deadLetterAtRetention(start);
    const { engine, clock, deliveryId } = setup;
    const retried = engine.actorFor(PROJECT).recovery.retry(deliveryId);
    clock.advance(DAY);
    const pruned = engine.pruneExpired();
    expect((await retried).status).toBe('pending');
    expect(await pruned).toBe(0);
    await expectWholeAfterNewRound(setup, 'RETRY');
  });

  it('(b) a redrive made while the prune commits: nothing is redriven, the delivery is gone whole', async () => {
    const setup = await deadLetterPastRetention(start);
    const { engine } = setup;
    const pruned = engine.pruneExpired();
    const redriven = inPruneCommitWindow(engine.store, () => engine.actorFor(PROJECT).recovery.redrive({}));
    expect(await pruned).toBe(1);
    expect(await redriven).toBe(0);
    await expectPruned(setup);
  });

  it('(b) a retry made while the prune commits: 404, the delivery is gone whole', async () => {
    const setup = await deadLetterPastRetention(start);
    const { engine, deliveryId } = setup;
    const pruned = engine.pruneExpired();
    const retried = inPruneCommitWindow(engine.store, () => engine.actorFor(PROJECT).recovery.retry(deliveryId));
    expect(await pruned).toBe(1);
    await expect(retried).rejects.toMatchObject({ code: 'HOOKLINE_ERR_DELIVERY_NOT_FOUND' });
    await expectPruned(setup);
  });
}

/** Two dead letters: `old` a millisecond past retention (not pruned yet), `recent` half as old as the retention. */
async function deadLettersAcrossRetention(start: (clock: ManualClock) => Promise<RaceNode>, clock = new ManualClock()) {
  // Every attempt fails: a redriven delivery is attempted again and dead-lettered again.
  const node = await nodeWithReceiver(start, () => 500, clock);
  const old = await sendToDeadLetter(node);
  node.clock.advance(DAY / 2);
  const recentSentAt = node.clock.now();
  const recent = await sendToDeadLetter(node);
  node.clock.advance(DAY / 2 + 1);
  return { ...node, old, recent, recentSentAt };
}

function pastRetentionTests(start: (clock: ManualClock) => Promise<RaceNode>): void {
  it('a dead letter past retention, not pruned yet: a retry answers 404 and a redrive neither counts nor starts it, while a newer dead letter is redriven', async () => {
    const { engine, client, receiver, old, recent, recentSentAt } = await deadLettersAcrossRetention(start);
    await expect(client.retryDelivery(old)).rejects.toMatchObject({ status: 404, code: 'delivery_not_found', message: expect.stringContaining('HOOKLINE_RETENTION') });
    // A window holding only the old one, then every dead letter.
    expect(await client.redriveDeadLetters({ until: new Date(recentSentAt), dryRun: true })).toEqual({ redriven: 0, wouldRedrive: 0, fits: true });
    expect(await client.redriveDeadLetters({ until: new Date(recentSentAt) })).toEqual({ redriven: 0, wouldRedrive: null });
    expect(await client.redriveDeadLetters({ dryRun: true })).toEqual({ redriven: 0, wouldRedrive: 1, fits: true });
    expect(await client.redriveDeadLetters()).toEqual({ redriven: 1, wouldRedrive: null });

    await waitFor(() => receiver.byWebhookId(recent).length === 2, { message: 'the newer dead letter attempted again' });
    expect(receiver.byWebhookId(old)).toHaveLength(1);
    expect(engine.actorFor(PROJECT).holds(old)).toBe(false);
    const kept = await client.getDelivery(old);
    expect(kept.status).toBe('dead_lettered');
    expect(kept.transitions.map((transition) => transition.event)).not.toContain('REDRIVE');
    expect(kept.transitions.map((transition) => transition.event)).not.toContain('RETRY');

    // Its event is never pruned: a replay still sends it, as a new delivery within retention.
    const { deliveryId: replayed } = await client.replayEvent(kept.eventId);
    await waitFor(() => receiver.byWebhookId(replayed).length === 1, { message: 'the replay attempted' });
  });
}

describe('HooklineStore.pruneTerminal', () => {
  it('deletes only what is still terminal and past the cutoff when it runs: a redrive written after the deliveries were found is kept', async () => {
    const store = openTempStore();
    const redriven = deliveryWithTransitions('dlv_1', 4, 'dead_lettered');
    const succeeded = deliveryWithTransitions('dlv_2', 4, 'succeeded');
    for (const record of [redriven, succeeded]) await store.restoreRecord(PROJECT, { kind: 'delivery', record });
    const found = store.terminalIdsBefore(PROJECT, 'dlv_9', 10);
    expect(found.sort()).toEqual(['dlv_1', 'dlv_2']);
    const redrive: DeliveryChange = { status: 'pending', attempts: 4, roundAttempts: 0, roundSize: 5, nextAttemptAt: 5, updatedAt: 5, transitions: [{ from: 'dead_lettered', to: 'pending', event: 'REDRIVE', at: 5 }], transitionIndex: 4, attemptIndex: 0 };
    // Issued before the prune's transaction, so committed before it runs.
    const written = store.applyDeliveryChanges(PROJECT, redriven, 'dead_lettered', [redrive]);
    expect(await store.pruneTerminal(PROJECT, 'dlv_9', found)).toBe(1);
    await written;
    expect(store.getDelivery(PROJECT, 'dlv_1')).toEqual(withChanges(redriven, [redrive]));
    expect(store.getDelivery(PROJECT, 'dlv_2')).toBeUndefined();
  });

  it('deletes nothing created at or after the cutoff', async () => {
    const store = openTempStore();
    await store.restoreRecord(PROJECT, { kind: 'delivery', record: deliveryWithTransitions('dlv_2', 4, 'succeeded') });
    expect(await store.pruneTerminal(PROJECT, 'dlv_2', ['dlv_2'])).toBe(0);
    expect(store.getDeliveryHead(PROJECT, 'dlv_2')?.status).toBe('succeeded');
  });
});

describe('retention pruning against retry and redrive, single node', () => {
  raceTests(singleNode);
  pastRetentionTests(singleNode);

  it('a dry run on a node without the project\'s actor yet (just restarted) leaves out a dead letter past retention too', async () => {
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const clock = new ManualClock();
    const settings = { ...RACE_SETTINGS, dataDir: dir.path };
    const first = await startTestHookline(settings, { clock });
    await deadLettersAcrossRetention(async () => ({ engine: first.node.engine, client: first.client }), clock);
    await first.close();
    // Every delivery is terminal, so the restart makes no actor; a dry run counts on the store.
    const second = await startTestHookline(settings, { clock });
    expect(await second.client.redriveDeadLetters({ dryRun: true })).toEqual({ redriven: 0, wouldRedrive: 1, fits: true });
  });
});

describe('retention pruning against retry and redrive, cluster node', () => {
  type AppModule = typeof import('../../dist/app.js');
  let startBuiltHookline: AppModule['startHookline'];
  const PARTITIONS = 4;
  const cleanups: Array<() => Promise<unknown> | void> = [];

  beforeAll(async () => {
    ensureBuilt();
    ({ startHookline: startBuiltHookline } = await import('../../dist/app.js'));
  });
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** The only node of a cluster on the shared NATS, serving every partition; from dist/, whose lease worker is built. */
  async function clusterNode(clock: ManualClock): Promise<RaceNode> {
    const names = uniqueClusterNames();
    const nats = await connectNats(SHARED_NATS_URL);
    cleanups.push(() => nats.close());
    cleanups.push(() => deleteStreams(nats, clusterStreams(names)));
    const dir = makeTempDir();
    cleanups.push(() => dir.remove());
    const settings = defaultSettings({ ...names, ...RACE_SETTINGS, natsUrl: SHARED_NATS_URL, nodeId: 'prune-race', cluster: true, partitions: PARTITIONS, leaseMs: 2_000, dataDir: dir.path, port: 0, apiKey: API_KEY, allowPrivateNetworks: true, retryJitter: false, logLevel: 'silent' });
    const node = await startBuiltHookline(settings, { clock });
    cleanups.push(() => node.close());
    await waitFor(async () => ((await (await fetch(`${node.url}/healthz`)).json()) as { cluster: { partitions: number[] } }).cluster.partitions.length === PARTITIONS, { timeoutMs: 15_000, message: 'every partition served' });
    // The built Engine: the same class as src's, compiled (its private members make the types differ).
    return { engine: node.engine as unknown as Engine, client: new HooklineClient({ baseUrl: node.url, apiKey: API_KEY }) };
  }

  raceTests(clusterNode);
  pastRetentionTests(clusterNode);
});
