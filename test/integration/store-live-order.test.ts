import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DeliveryStatus } from '../../src/machines/index.js';
import type { DeliveryRecord, DeliverySchedule, EventRecord } from '../../src/store/records.js';
import { HooklineStore } from '../../src/store/store.js';
import { testDataDir } from '../helpers/temp-dir.js';

/**
 * A window refill reads a project's waiting deliveries in ascending id order across their statuses
 * (`DeliveryTables.forEachById`), the order ordered delivery needs and the live index holds cheapest
 * (src/actors/live-index.ts).
 */

const STATUSES: DeliveryStatus[] = ['pending', 'delivering', 'retrying', 'succeeded', 'dead_lettered'];
const LIVE: DeliveryStatus[] = ['pending', 'delivering', 'retrying'];

function records(n: number, status: DeliveryStatus, at: number): { event: EventRecord; delivery: DeliveryRecord } {
  const id = `dlv_${n.toString().padStart(8, '0')}`;
  const eventId = `evt_${n}`;
  const delivery: DeliveryRecord = {
    id, eventId, eventType: 'service.trigger.event', status, attempts: 0, roundAttempts: 0, roundSize: 3,
    nextAttemptAt: status === 'pending' || status === 'retrying' ? at + n : null, createdAt: at, updatedAt: at,
    attemptLog: [], transitions: [{ from: null, to: 'pending', event: 'CREATED', at }],
  };
  const event: EventRecord = { id: eventId, type: 'service.trigger.event', fingerprint: '~', envelope: Buffer.from('{}'), createdAt: at, answer: { id: eventId, deliveryId: id }, deliveryIds: [id] };
  return { event, delivery };
}

/** Stores delivery `n` of the project in `status` with its event, as an ingest does. */
function ingest(store: HooklineStore, projectId: string, n: number, status: DeliveryStatus, at: number): Promise<unknown> {
  const { event, delivery } = records(n, status, at);
  return store.writeIngest(projectId, event, delivery);
}

describe('DeliveryTables.forEachById', () => {
  it('gives every live delivery of the project once, with its status and due time, in ascending id order (seeded)', async () => {
    const store = new HooklineStore({ path: testDataDir() });
    try {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(fc.constantFrom(...STATUSES), { maxLength: 40 }), async (statuses) => {
          const projectId = `prj_${run++}`;
          const at = 1_790_000_000_000;
          // Written in a shuffled order, so the index order is the store's, not the writes'.
          const order = statuses.map((status, n) => ({ status, n })).sort((a, b) => ((a.n * 7919) % 41) - ((b.n * 7919) % 41));
          await Promise.all(order.map(({ status, n }) => ingest(store, projectId, n, status, at)));
          const got: Array<{ id: string; status: DeliveryStatus; schedule: DeliverySchedule }> = [];
          store.deliveryTables.forEachById(projectId, LIVE, '', (id, status, schedule) => void got.push({ id, status, schedule }));
          const expected = statuses.map((status, n) => ({ status, n })).filter(({ status }) => LIVE.includes(status));
          expect(got.map(({ id, status }) => ({ id, status }))).toEqual(expected.map(({ status, n }) => ({ id: `dlv_${n.toString().padStart(8, '0')}`, status })));
          for (const { id, schedule, status } of got) expect(schedule[0]).toBe(status === 'delivering' ? null : at + Number(id.slice(4)));
        }),
        { seed: 2512, numRuns: 40 },
      );
    } finally {
      await store.close();
    }
  });
});

describe('DeliveryTables.countInStatusesInTurns', () => {
  it('counts what one snapshot held, a few keys a turn, whatever is written meanwhile (seeded)', async () => {
    const store = new HooklineStore({ path: testDataDir() });
    try {
      let run = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(fc.constantFrom(...STATUSES), { maxLength: 40 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 0, max: 5 }), async (statuses, keysPerTurn, later) => {
          const projectId = `prj_count_${run++}`;
          const at = 1_790_000_000_000;
          await Promise.all(statuses.map((status, n) => ingest(store, projectId, n, status, at)));
          const expected = statuses.filter((status) => LIVE.includes(status)).length;
          const { counted, rest } = store.deliveryTables.countInStatusesInTurns(projectId, LIVE, keysPerTurn);
          // Written after the snapshot: not counted (the lifecycle adds what it admits itself).
          await Promise.all(Array.from({ length: later }, (_, i) => ingest(store, projectId, 1000 + i, 'pending', at)));
          // Counted at once while a range's rest is short; otherwise in later turns.
          if (expected < keysPerTurn) expect(rest).toBeNull();
          expect(counted + ((await rest) ?? 0)).toBe(expected);
          expect(store.deliveryTables.countInStatuses(projectId, LIVE)).toBe(expected + later);
        }),
        { seed: 3535, numRuns: 60 },
      );
    } finally {
      await store.close();
    }
  });
});
