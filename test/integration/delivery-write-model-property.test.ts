import fc from 'fast-check';
import { open } from 'lmdb';
import type { Key } from 'lmdb';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Engine } from '../../src/actors/engine.js';
import { defaultSettings } from '../../src/config/settings.js';
import { DELIVERY_EVENT_TYPES, DELIVERY_STATUSES, deliveryTable } from '../../src/machines/index.js';
import type { DeliveryEventType } from '../../src/machines/index.js';
import type { DeliveryChange, DeliveryRecord, EventRecord, WebhookRecord } from '../../src/store/records.js';
import { HooklineStore } from '../../src/store/store.js';
import { queryDeliveries } from '../../src/store/delivery-query.js';
import type { UnstoredSteps } from '../../src/store/delivery-query.js';
import { openTempStore } from '../helpers/store-fixtures.js';
import { makeTempDir } from '../helpers/temp-dir.js';

/**
 * The delivery write model (a head plus log entries under their own keys, written without reading)
 * against the model it replaced: for any sequence of machine steps, committed in any grouping and
 * with groups written again as after a commit that was never confirmed, the delivery read back is
 * the record the earlier model built by rewriting one whole record per step.
 */

const PROJECT = 'p';
const ROUND = 3;

/** The earlier model's record after each step: the whole record, its logs pushed onto. */
function referenceRecord(first: DeliveryRecord, changes: readonly DeliveryChange[]): DeliveryRecord {
  const record = structuredClone(first);
  for (const change of changes) {
    record.status = change.status;
    record.attempts = change.attempts;
    record.roundAttempts = change.roundAttempts;
    record.roundSize = change.roundSize;
    record.nextAttemptAt = change.nextAttemptAt;
    record.updatedAt = change.updatedAt;
    record.transitions.push(...change.transitions);
    if (change.attempt) record.attemptLog.push(change.attempt);
  }
  return record;
}

function newRecord(index: number): DeliveryRecord {
  const at = 1_700_000_000_000 + index;
  return {
    id: `dlv_01M8000000000000000000${String(index).padStart(4, '0')}`,
    eventId: `evt_${index}`,
    eventType: 'service.trigger.event',
    status: 'pending',
    attempts: 0,
    roundAttempts: 0,
    roundSize: ROUND,
    nextAttemptAt: at,
    createdAt: at,
    updatedAt: at,
    attemptLog: [],
    transitions: [{ from: null, to: 'pending', event: 'CREATED', at }],
  };
}

/** The steps a delivery takes for the chosen events (each taken modulo those the machine allows then), as the actor records them. */
function stepsFor(first: DeliveryRecord, choices: readonly number[]): DeliveryChange[] {
  let status = first.status;
  let counters = { attempts: 0, roundAttempts: 0, maxAttempts: ROUND };
  let transitionIndex = first.transitions.length;
  let attemptIndex = 0;
  const changes: DeliveryChange[] = [];
  choices.forEach((choice, n) => {
    const allowed = DELIVERY_EVENT_TYPES.filter((type: DeliveryEventType) => deliveryTable.next(status, counters, { type }) !== null);
    if (allowed.length === 0) return;
    const event = allowed[choice % allowed.length]!;
    const step = deliveryTable.next(status, counters, { type: event })!;
    const at = first.createdAt + n + 1;
    const outcome = event === 'ATTEMPT_SUCCEEDED' || event === 'ATTEMPT_FAILED';
    const change: DeliveryChange = {
      status: step.state,
      attempts: step.context.attempts,
      roundAttempts: step.context.roundAttempts,
      roundSize: step.context.maxAttempts,
      nextAttemptAt: step.state === 'pending' || step.state === 'retrying' ? at + 10 : null,
      updatedAt: at,
      transitions: step.transitions.map((hop) => ({ from: hop.from, to: hop.to, event, at })),
      transitionIndex,
      attemptIndex,
      ...(outcome ? { attempt: { attempt: step.context.attempts, at, statusCode: event === 'ATTEMPT_SUCCEEDED' ? 204 : 500, durationMs: n, error: null, errorCode: null, responseBody: `r${n}` } } : {}),
    };
    transitionIndex += change.transitions.length;
    if (change.attempt) attemptIndex++;
    changes.push(change);
    status = step.state;
    counters = step.context;
  });
  return changes;
}

function eventOf(record: DeliveryRecord): EventRecord {
  return { id: record.eventId, type: record.eventType, fingerprint: 'f', envelope: new Uint8Array([1]), createdAt: record.createdAt, answer: { id: record.eventId, deliveryId: record.id }, deliveryIds: [record.id] };
}

/** Writes the steps in the given groups; a group marked `again` is written, then written again with the next one (its commit taken for unconfirmed). */
async function writeSteps(store: HooklineStore, first: DeliveryRecord, changes: DeliveryChange[], cuts: Array<{ size: number; again: boolean }>, projectId = PROJECT): Promise<void> {
  // The stored status and due time, as the delivery's writer tracks them (delivery-writer.ts).
  let stored = first.status;
  let storedDueAt: number | null = null;
  let from = 0;
  let unconfirmed: DeliveryChange[] = [];
  for (const cut of cuts) {
    if (from >= changes.length) break;
    const group = changes.slice(from, from + cut.size);
    from += group.length;
    await store.applyDeliveryChanges(projectId, first, stored, [...unconfirmed, ...group], unconfirmed.length > 0, storedDueAt);
    if (cut.again) {
      unconfirmed = [...unconfirmed, ...group];
    } else {
      unconfirmed = [];
      stored = group.at(-1)!.status;
      storedDueAt = stored === 'retrying' ? group.at(-1)!.nextAttemptAt : null;
    }
  }
  const rest = changes.slice(from);
  if (unconfirmed.length + rest.length > 0) await store.applyDeliveryChanges(projectId, first, stored, [...unconfirmed, ...rest], unconfirmed.length > 0, storedDueAt);
}

/** Every entry of the due index, as [projectId, dueAt, deliveryId]. */
const dueEntries = (store: HooklineStore) => [...store.deliveryTables.due.getKeys()].filter((key) => Array.isArray(key));

const indexedStatuses = (store: HooklineStore, id: string) => DELIVERY_STATUSES.filter((status) => [...store.deliveryIdsByStatus(PROJECT, status)].includes(id));

const deliveryArbitrary = fc.record({
  choices: fc.array(fc.nat(), { maxLength: 24 }),
  cuts: fc.array(fc.record({ size: fc.integer({ min: 1, max: 4 }), again: fc.boolean() }), { maxLength: 12 }),
});

describe('delivery write model', () => {
  it('reads back, for any steps in any commits, the record the earlier model built; the status index holds the last status only', async () => {
    const store = openTempStore();
    let index = 0;
    await fc.assert(
      fc.asyncProperty(deliveryArbitrary, async ({ choices, cuts }) => {
        const first = newRecord(index++);
        await store.writeIngest(PROJECT, eventOf(first), first);
        const changes = stepsFor(first, choices);
        await writeSteps(store, first, changes, cuts);
        const expected = referenceRecord(first, changes);
        expect(store.getDelivery(PROJECT, first.id)).toEqual(expected);
        expect(indexedStatuses(store, first.id)).toEqual([expected.status]);
        // The due index holds a retrying delivery at its due time, and nothing else of it.
        expect(dueEntries(store).filter((key) => key[2] === first.id)).toEqual(expected.status === 'retrying' ? [[PROJECT, expected.nextAttemptAt, first.id]] : []);
      }),
      { seed: 12, numRuns: 150 },
    );
  });

  it('the due index matches a model of the retrying deliveries under any ingests, steps, restarts and prunes, and a refill reads it in due order', async () => {
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    let store = new HooklineStore({ path: dir.path });
    onTestFinished(() => store.close());
    let index = 0;
    const operation = fc.oneof(
      fc.record({ kind: fc.constant('deliveries' as const), plans: fc.array(deliveryArbitrary, { minLength: 1, maxLength: 5 }), project: fc.constantFrom('a', 'b') }),
      fc.record({ kind: fc.constant('restart' as const) }),
      fc.record({ kind: fc.constant('prune' as const), project: fc.constantFrom('a', 'b') }),
    );
    /** The model: each delivery's head as the reference records end. */
    const model = new Map<string, { projectId: string; record: DeliveryRecord }>();
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 8 }), async (operations) => {
        for (const op of operations) {
          if (op.kind === 'deliveries') {
            for (const { choices, cuts } of op.plans) {
              const first = newRecord(index++);
              await store.writeIngest(op.project, eventOf(first), first);
              const changes = stepsFor(first, choices);
              await writeSteps(store, first, changes, cuts, op.project);
              model.set(first.id, { projectId: op.project, record: referenceRecord(first, changes) });
            }
          } else if (op.kind === 'restart') {
            await store.close();
            store = new HooklineStore({ path: dir.path });
          } else {
            await store.pruneTerminal(op.project, 'dlv_\uffff', store.terminalIdsBefore(op.project, 'dlv_\uffff', 10_000));
            for (const [id, { projectId, record }] of model) if (projectId === op.project && (record.status === 'succeeded' || record.status === 'dead_lettered')) model.delete(id);
          }
        }
        const expected = [...model.values()].filter(({ record }) => record.status === 'retrying').map(({ projectId, record }) => [projectId, record.nextAttemptAt, record.id]);
        const byKey = (a: unknown[], b: unknown[]) => JSON.stringify(a).localeCompare(JSON.stringify(b));
        expect(dueEntries(store).sort(byKey)).toEqual(expected.sort(byKey));
        for (const project of ['a', 'b']) {
          const retrying = [...model.values()].filter(({ projectId, record }) => projectId === project && record.status === 'retrying').map(({ record }) => record);
          const inDueOrder = retrying.sort((x, y) => x.nextAttemptAt! - y.nextAttemptAt! || (x.id < y.id ? -1 : 1)).map((record) => record.id);
          // A refill in batches of 2 reads them all, in due order, once each.
          const read: string[] = [];
          let from = null;
          do {
            const batch = store.deliveryTables.dueRetrying(project, from, Infinity, 2, () => false);
            expect(batch.stale).toEqual([]);
            read.push(...batch.found.map((entry) => entry.id));
            from = batch.next;
          } while (from !== null);
          expect(read).toEqual(inDueOrder);
          const waiting = [...model.values()].filter(({ projectId, record }) => projectId === project && record.status !== 'succeeded' && record.status !== 'dead_lettered');
          expect(store.deliveryTables.countInStatuses(project, ['pending', 'delivering', 'retrying'])).toBe(waiting.length);
        }
      }),
      { seed: 35, numRuns: 40 },
    );
  });

  it('a status filter finds each delivery by the status a read shows, stored or still in memory, once and newest first', async () => {
    const store = openTempStore();
    let index = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ choices: fc.array(fc.nat(), { maxLength: 12 }), stored: fc.nat() }), { minLength: 1, maxLength: 8 }), async (plans) => {
        const project = `q${index}`;
        // Each delivery's first steps are stored, the rest held as its actor would (not yet committed).
        const unstoredById = new Map<string, DeliveryChange[]>();
        const shownById = new Map<string, DeliveryRecord['status']>();
        for (const { choices, stored } of plans) {
          const first = { ...newRecord(index++) };
          await store.writeIngest(project, eventOf(first), first);
          const changes = stepsFor(first, choices);
          const cut = changes.length === 0 ? 0 : stored % (changes.length + 1);
          if (cut > 0) await store.applyDeliveryChanges(project, first, first.status, changes.slice(0, cut), false);
          unstoredById.set(first.id, changes.slice(cut));
          shownById.set(first.id, changes.at(-1)?.status ?? first.status);
        }
        const unstored: UnstoredSteps = {
          changes: (id) => unstoredById.get(id) ?? [],
          idsShownAs: (status) => [...unstoredById].filter(([id, rest]) => rest.length > 0 && shownById.get(id) === status).map(([id]) => id),
        };
        for (const status of DELIVERY_STATUSES) {
          const page = queryDeliveries(store, project, { status, limit: 250 }, unstored);
          const expected = [...shownById].filter(([, shown]) => shown === status).map(([id]) => id).sort().reverse();
          expect(page.data.map((delivery) => delivery.id), status).toEqual(expected);
          for (const delivery of page.data) expect(delivery.status).toBe(status);
        }
      }),
      { seed: 21, numRuns: 60 },
    );
  });

  it('reads the whole records an earlier version stored (converted at open)', async () => {
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const records = fc.sample(deliveryArbitrary, { seed: 7, numRuns: 40 }).map(({ choices }, n) => {
      const first = newRecord(n);
      return referenceRecord(first, stepsFor(first, choices));
    });
    // As the earlier model stored them: whole records in `deliveries`, the status index beside.
    const root = open({ path: dir.path, noSubdir: false });
    const deliveries = root.openDB<DeliveryRecord, [string, string]>({ name: 'deliveries' });
    const byStatus = root.openDB<true, [string, string, string]>({ name: 'deliveries-by-status' });
    await root.transaction(() => {
      for (const record of records) {
        deliveries.put([PROJECT, record.id], record);
        byStatus.put([PROJECT, record.status, record.id], true);
      }
    });
    await root.close();

    for (let opening = 0; opening < 2; opening++) {
      const store = new HooklineStore({ path: dir.path });
      for (const record of records) expect(store.getDelivery(PROJECT, record.id)).toEqual(record);
      await store.close();
    }
  });

  it('keys every log entry by its delivery, not its project: a commit of many projects appends in one place', async () => {
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const store = new HooklineStore({ path: dir.path });
    const samples = fc.sample(deliveryArbitrary, { seed: 11, numRuns: 20 });
    for (const [n, { choices }] of samples.entries()) {
      const first = newRecord(n);
      const projectId = `project-${n % 3}`;
      await store.writeIngest(projectId, eventOf(first), first);
      const changes = stepsFor(first, choices);
      if (changes.length > 0) await store.applyDeliveryChanges(projectId, first, first.status, changes, false);
      expect(store.getDelivery(projectId, first.id)).toEqual(referenceRecord(first, changes));
    }
    await store.close();

    const root = open({ path: dir.path, noSubdir: false });
    onTestFinished(() => root.close());
    const ids = new Set(samples.map((_, n) => newRecord(n).id));
    for (const name of ['delivery-transitions', 'delivery-attempts']) {
      const keys = [...root.openDB<unknown, Key[]>({ name }).getKeys()].filter((key) => Array.isArray(key));
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) {
        expect(key).toHaveLength(2);
        expect(ids.has(key[0] as string)).toBe(true);
      }
    }
    expect(root.openDB<number, string>({ name: 'meta' }).get('delivery-model')).toBe(3);
  });

  it('reads the log entries an earlier version keyed by project, goes on from them, and prunes them', async () => {
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const deliveries = fc.sample(deliveryArbitrary, { seed: 5, numRuns: 30 }).map(({ choices }, n) => {
      const first = newRecord(n);
      const changes = stepsFor(first, choices);
      // Steps stored before the upgrade, and those made after it.
      const before = Math.floor(changes.length / 2);
      return { first, stored: referenceRecord(first, changes.slice(0, before)), later: changes.slice(before), whole: referenceRecord(first, changes) };
    });
    // As model 2 stored them: heads, the status index, and logs under [projectId, deliveryId, index].
    const root = open({ path: dir.path, noSubdir: false });
    const tables = new Map(['deliveries', 'deliveries-by-status', 'delivery-transitions', 'delivery-attempts', 'meta'].map((name) => [name, root.openDB<unknown, Key>({ name })]));
    const table = (name: string) => tables.get(name)!;
    await root.transaction(() => {
      for (const { stored } of deliveries) {
        const head = { ...stored, transitionCount: stored.transitions.length, attemptCount: stored.attemptLog.length } as Record<string, unknown>;
        delete head.transitions;
        delete head.attemptLog;
        table('deliveries').put([PROJECT, stored.id], head);
        table('deliveries-by-status').put([PROJECT, stored.status, stored.id], [stored.nextAttemptAt, stored.attempts, stored.roundAttempts, stored.roundSize, stored.transitions.length, stored.attemptLog.length]);
        stored.transitions.forEach((transition, index) => table('delivery-transitions').put([PROJECT, stored.id, index], transition));
        stored.attemptLog.forEach((attempt, index) => table('delivery-attempts').put([PROJECT, stored.id, index], attempt));
      }
      table('meta').put('delivery-model', 2);
    });
    await root.close();

    const store = new HooklineStore({ path: dir.path });
    for (const { stored } of deliveries) expect(store.getDelivery(PROJECT, stored.id)).toEqual(stored);
    for (const { first, stored, later } of deliveries) if (later.length > 0) await store.applyDeliveryChanges(PROJECT, first, stored.status, later, false);
    await store.close();

    const reopened = new HooklineStore({ path: dir.path });
    for (const { whole } of deliveries) expect(reopened.getDelivery(PROJECT, whole.id)).toEqual(whole);
    const terminal = deliveries.filter(({ whole }) => whole.status === 'succeeded' || whole.status === 'dead_lettered');
    expect(terminal.length).toBeGreaterThan(0);
    expect(await reopened.pruneTerminal(PROJECT, 'dlv_\uffff', reopened.terminalIdsBefore(PROJECT, 'dlv_\uffff', 1000))).toBe(terminal.length);
    for (const { whole } of terminal) expect(reopened.getDelivery(PROJECT, whole.id)).toBeUndefined();
    await reopened.close();

    // Nothing of a pruned delivery is left under either key.
    const after = open({ path: dir.path, noSubdir: false });
    onTestFinished(() => after.close());
    const pruned = new Set(terminal.map(({ whole }) => whole.id));
    for (const name of ['delivery-transitions', 'delivery-attempts']) {
      for (const key of after.openDB<unknown, Key[]>({ name }).getKeys()) {
        if (!Array.isArray(key)) continue;
        expect(pruned.has((key.length === 3 ? key[1] : key[0]) as string)).toBe(false);
      }
    }
  });

  it('a restart resumes exactly the deliveries that are not terminal, from their heads', async () => {
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const store = new HooklineStore({ path: dir.path });
    await store.createProject({ id: PROJECT, name: PROJECT, createdAt: 1 }, 'hash');
    // Paused: the resumed deliveries are held, not attempted, so what is live is what was resumed.
    const webhook: WebhookRecord = { callbackUrl: 'http://127.0.0.1:9/', state: 'paused', eventTypes: ['service.trigger.event'], createdAt: 1, updatedAt: 1, secrets: [{ secret: 'whsec_AAAA', createdAt: 1, expiresAt: null }], failingSince: null, disabledAt: null, disabledReason: null };
    await store.putWebhook(PROJECT, webhook);
    const finals = new Map<string, DeliveryRecord['status']>();
    const samples = fc.sample(deliveryArbitrary, { seed: 3, numRuns: 120 });
    for (const [n, { choices, cuts }] of samples.entries()) {
      const first = newRecord(n);
      await store.writeIngest(PROJECT, eventOf(first), first);
      const changes = stepsFor(first, choices);
      await writeSteps(store, first, changes, cuts);
      finals.set(first.id, changes.at(-1)?.status ?? 'pending');
    }
    await store.close();

    const engine = await Engine.start({ settings: defaultSettings({ dataDir: dir.path, logLevel: 'silent', retrySchedule: [0, 50, 100], retryJitter: false }) });
    onTestFinished(() => engine.stop(1000));
    const actor = engine.actorFor(PROJECT);
    const live = [...finals].filter(([, status]) => status !== 'succeeded' && status !== 'dead_lettered').map(([id]) => id);
    expect(live.length).toBeGreaterThan(10);
    expect(actor.liveCount).toBe(live.length);
    expect(actor.waiting).toBe(live.length);
    for (const id of live) expect(actor.holds(id), id).toBe(true);
  });

  it('builds the due index of a store written before it, once, at open', async () => {
    const dir = makeTempDir();
    onTestFinished(() => dir.remove());
    const store = new HooklineStore({ path: dir.path });
    const retrying = new Map<string, number>();
    for (const [n, { choices, cuts }] of fc.sample(deliveryArbitrary, { seed: 9, numRuns: 60 }).entries()) {
      const first = newRecord(n);
      await store.writeIngest(PROJECT, eventOf(first), first);
      const changes = stepsFor(first, choices);
      await writeSteps(store, first, changes, cuts);
      if (changes.at(-1)?.status === 'retrying') retrying.set(first.id, changes.at(-1)!.nextAttemptAt!);
    }
    expect(retrying.size).toBeGreaterThan(3);
    await store.close();
    // As a version without the due index left it: no entries, no mark in `meta`.
    const root = open({ path: dir.path, noSubdir: false });
    const due = root.openDB<unknown, Key>({ name: 'deliveries-due' });
    await root.transaction(() => {
      for (const key of due.getKeys()) due.remove(key);
      root.openDB<unknown, Key>({ name: 'meta' }).remove('due-index');
    });
    await root.close();

    const reopened = new HooklineStore({ path: dir.path });
    onTestFinished(() => reopened.close());
    expect(dueEntries(reopened).filter((key) => key[0] === PROJECT).map((key) => [key[2], key[1]]).sort()).toEqual([...retrying].sort());
  });
});
